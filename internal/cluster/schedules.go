package cluster

// The schedules request: the hub asks a node's schedule Runner to list,
// add, pause, resume or remove its schedules (internal/schedule's
// Request and Answer, carried as they are: a node keeps and runs its own
// schedules, the hub keeps none of them).

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/parleyhq/parley/internal/chat"
)

// schedulesSubject is where the hub asks node about its schedules.
func schedulesSubject(node string) string { return ToSubject(node) + ".schedules" }

// schedulesTimeout bounds one schedules request: an add is a store write
// on the node.
const schedulesTimeout = 15 * time.Second

// ServeSchedules answers the hub's schedules requests with serve (this
// machine's schedule.Runner.Serve). It lasts as long as the link.
func (l *Link) ServeSchedules(serve func(ctx context.Context, req []byte) []byte) error {
	return l.serveHub(schedulesSubject(l.opt.Node), func(m *nats.Msg) {
		ctx, cancel := context.WithTimeout(l.life, schedulesTimeout)
		out := serve(ctx, m.Data)
		cancel()
		if err := m.Respond(out); err != nil {
			l.log.Warn("cluster: answer a schedules request", "err", err)
		}
	})
}

// NodeSchedules sends node a schedules request and returns its answer. A
// node that nothing answers for is chat.ErrAway, saying so.
func (h *Hub) NodeSchedules(ctx context.Context, node string, req []byte) ([]byte, error) {
	if err := CheckName(node); err != nil {
		return nil, fmt.Errorf("machine %q: %w", node, chat.ErrBadInput)
	}
	known := false
	if nodes, err := h.Nodes(ctx); err == nil {
		for _, n := range nodes {
			known = known || n.Name == node
		}
	}
	if !known {
		return nil, fmt.Errorf("no machine %q is joined to this hub: %w", node, chat.ErrBadInput)
	}
	ctx, cancel := context.WithTimeout(ctx, schedulesTimeout)
	defer cancel()
	m, err := h.nc.RequestWithContext(ctx, schedulesSubject(node), req)
	if errors.Is(err, nats.ErrNoResponders) {
		return nil, fmt.Errorf("machine %s does not answer (offline, or a parley too old to share its schedules): its schedules are kept there; nothing was changed: %w", node, chat.ErrAway)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: ask machine %s about its schedules: %w", node, err)
	}
	return m.Data, nil
}
