package cluster

// The hub's end of the sessions request: a node's agents' own sessions
// (node_sessions.go is the other end).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/parleyhq/parley/internal/sessions"
)

// NodeSessions asks node for its agents' own sessions, each named by node
// (a node speaks only for itself). ErrNodeOffline: nothing answers for it.
func (h *Hub) NodeSessions(ctx context.Context, node string, f sessions.Filter) ([]sessions.Session, error) {
	b, _ := json.Marshal(f)
	ctx, cancel := context.WithTimeout(ctx, sourceTimeout)
	defer cancel()
	m, err := h.nc.RequestWithContext(ctx, sessionsSubject(node), b)
	if errors.Is(err, nats.ErrNoResponders) {
		return nil, fmt.Errorf("%w: %s", ErrNodeOffline, node)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: ask machine %s for its sessions: %w", node, err)
	}
	var ans sessionsAnswer
	if err := json.Unmarshal(m.Data, &ans); err != nil {
		return nil, fmt.Errorf("cluster: machine %s answered something that is not JSON", node)
	}
	if ans.Error != "" {
		return nil, fmt.Errorf("machine %s: %s", node, ans.Error)
	}
	for i := range ans.Sessions {
		ans.Sessions[i].Node, ans.Sessions[i].Path = node, ""
	}
	return ans.Sessions, nil
}
