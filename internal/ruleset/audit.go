package ruleset

import (
	"context"
	"encoding/json"

	"github.com/parleyhq/parley/internal/audit"
)

// record puts a rule made, changed or removed in the audit trail
// (Options.Audit): Add, Update and Remove are where each happens. One the
// hub asked for (Serve) is the hub machine's act, and names the person
// there.
func (s *Set) record(ctx context.Context, id, verb string, sp *Spec) {
	if s.opt.Audit == nil {
		return
	}
	actor := audit.ActorFrom(ctx)
	if actor == "" {
		actor = audit.ActorCLI
	}
	detail := map[string]any{"rule_id": id}
	if sp != nil {
		detail["rule"] = sp
	}
	subject := "rule " + id + " " + verb
	if c, ok := ctx.Value(viaHub{}).(hubCaller); ok {
		detail["hub"], detail["by"], detail["hub_actor"] = c.hub, c.by, c.actor
		subject += " at machine " + c.hub + " by " + c.by
	}
	s.write(actor, subject, detail)
}

// recordAt puts a rule made, changed or removed on another machine at this
// hub's request in this hub's trail too (the node records it in its own).
func (s *Set) recordAt(ctx context.Context, machine, id, verb string, sp *Spec) {
	if s.opt.Audit == nil {
		return
	}
	actor := audit.ActorFrom(ctx)
	if actor == "" {
		actor = audit.ActorCLI
	}
	detail := map[string]any{"rule_id": id, "machine": machine}
	if sp != nil {
		detail["rule"] = sp
	}
	s.write(actor, "rule "+id+" "+verb+" on machine "+machine, detail)
}

func (s *Set) write(actor, subject string, detail map[string]any) {
	d, _ := json.Marshal(detail)
	s.opt.Audit.Record(audit.Entry{Kind: audit.KindRuleChange, Actor: actor, Subject: subject, Detail: d})
}
