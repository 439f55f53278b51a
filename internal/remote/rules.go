package remote

import (
	"context"

	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/ruleset"
)

// Rules is the nodes' approval rules as the hub's ruleset reaches them:
// each asked of its node (cluster.Hub.NodeRules).
func (h *Hub) Rules() ruleset.Remote { return hubRules{hub: h.hub} }

type hubRules struct{ hub *cluster.Hub }

func (r hubRules) Ask(ctx context.Context, machine string, req []byte) ([]byte, error) {
	return r.hub.NodeRules(ctx, machine, req)
}
