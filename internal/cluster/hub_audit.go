package cluster

import (
	"context"
	"encoding/json"

	"github.com/parleyhq/parley/internal/audit"
)

// record puts a machine's join or revocation in the audit trail
// (HubOptions.Audit), the one place each happens.
func (h *Hub) record(ctx context.Context, kind, node, actor, subject string, detail map[string]string) {
	if h.opt.Audit == nil {
		return
	}
	if actor == "" {
		actor = audit.ActorFrom(ctx)
	}
	if actor == "" {
		actor = audit.ActorCLI
	}
	d, _ := json.Marshal(detail)
	h.opt.Audit.Record(audit.Entry{Kind: kind, Actor: actor, Subject: subject, Detail: d})
}
