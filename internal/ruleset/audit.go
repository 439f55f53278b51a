package ruleset

import (
	"context"
	"encoding/json"

	"github.com/parleyhq/parley/internal/audit"
)

// record puts a rule made, changed or removed in the audit trail
// (Options.Audit): Add, Update and Remove are where each happens.
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
	d, _ := json.Marshal(detail)
	s.opt.Audit.Record(audit.Entry{Kind: audit.KindRuleChange, Actor: actor, Subject: "rule " + id + " " + verb, Detail: d})
}
