package trigger

import (
	"context"
	"encoding/json"

	"github.com/parleyhq/parley/internal/audit"
)

// record puts a trigger added or removed in the audit trail (Options.Audit):
// Add and Remove are where each happens. Its template and secret are never
// recorded.
func (s *Triggers) record(ctx context.Context, verb string, t Trigger) {
	if s.opt.Audit == nil {
		return
	}
	detail := map[string]any{"trigger_id": t.ID}
	if t.Agent != "" {
		detail["agent"], detail["cwd"] = t.Agent, t.Cwd
	}
	if t.Name != "" {
		detail["name"] = t.Name
	}
	if s.opt.Machine != "" {
		detail["machine"] = s.opt.Machine
	}
	d, _ := json.Marshal(detail)
	s.opt.Audit.Record(audit.Entry{Kind: audit.KindTriggerChange, Actor: audit.ActorOr(ctx, audit.ActorCLI),
		Thread: string(t.Thread), Subject: "trigger " + t.ID + " " + verb, Detail: d})
}
