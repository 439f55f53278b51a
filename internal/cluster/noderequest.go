package cluster

// A request the hub makes of one node's part that keeps its own state (its
// schedules, its approval rules): the bytes go as they are, the node's part
// answers them, the hub keeps nothing of it. Written once here for every
// such part; each names its subject and says what it asks about.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/parleyhq/parley/internal/chat"
)

// nodeTimeout bounds one request to a node's part: a change is a store
// write on the node.
const nodeTimeout = 15 * time.Second

// servePart answers the hub's requests on subject with serve. It lasts as
// long as the link. what names the part in the log ("schedules").
func (l *Link) servePart(subject, what string, serve func(ctx context.Context, req []byte) []byte) error {
	return l.servePartWithin(subject, what, nodeTimeout, serve)
}

// servePartWithin is servePart with serve given within to answer (a push
// or a commit's hooks take longer than a store write).
func (l *Link) servePartWithin(subject, what string, within time.Duration, serve func(ctx context.Context, req []byte) []byte) error {
	return l.serveHub(subject, func(m *nats.Msg) {
		ctx, cancel := context.WithTimeout(l.life, within)
		out := serve(ctx, m.Data)
		cancel()
		if err := m.Respond(out); err != nil {
			l.log.Warn("cluster: answer a "+what+" request", "err", err)
		}
	})
}

// askPart sends node a request on subject and returns its answer. A node
// that is not joined is chat.ErrBadInput; one that nothing answers for is
// chat.ErrAway, saying so: what ("schedules") is kept there and nothing was
// changed.
func (h *Hub) askPart(ctx context.Context, node, subject, what string, req []byte) ([]byte, error) {
	return h.askPartWithin(ctx, node, subject, what, nodeTimeout, req)
}

// askPartWithin is askPart waiting within for the answer; one that does
// not come in time is ErrNodeSlow (what was asked may still happen there).
func (h *Hub) askPartWithin(ctx context.Context, node, subject, what string, within time.Duration, req []byte) ([]byte, error) {
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
	asked, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	m, err := h.nc.RequestWithContext(asked, subject, req)
	if errors.Is(err, nats.ErrNoResponders) {
		return nil, fmt.Errorf("machine %s does not answer (offline, or a parley too old to share its %s): its %s are kept there; nothing was changed: %w",
			node, what, what, chat.ErrAway)
	}
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return nil, fmt.Errorf("%w: machine %s did not answer about its %s within %v", ErrNodeSlow, node, what, within)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: ask machine %s about its %s: %w", node, what, err)
	}
	return m.Data, nil
}
