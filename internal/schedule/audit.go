package schedule

import (
	"context"
	"encoding/json"

	"github.com/parleyhq/parley/internal/audit"
)

// record puts a schedule added, paused, resumed or removed through the API
// in the audit trail (Options.Audit), at the machine the request came to: s
// is the schedule as answered (only its id for a removal). Its text, a
// message to send, is never recorded.
func (r *Runner) record(ctx context.Context, verb string, s Schedule) {
	if r.opt.Audit == nil {
		return
	}
	detail := map[string]any{"schedule_id": s.ID}
	if s.Agent != "" {
		detail["agent"], detail["cwd"], detail["kind"], detail["expr"] = s.Agent, s.Cwd, s.Kind, s.Expr
	}
	if s.Name != "" {
		detail["name"] = s.Name
	}
	if m := firstOf(s.Node, r.opt.Machine); m != "" {
		detail["machine"] = m
	}
	d, _ := json.Marshal(detail)
	r.opt.Audit.Record(audit.Entry{Kind: audit.KindScheduleChange, Actor: audit.ActorOr(ctx, audit.ActorCLI),
		Thread: string(s.Thread), Subject: "schedule " + s.ID + " " + verb, Detail: d})
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
