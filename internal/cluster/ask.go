package cluster

// The hub's requests to one node and the node's answers, for what only the
// node can do with its own threads' working trees (node_work.go,
// hub_work.go; the changes request, hub_changes.go, answers in its own
// shape). One mechanism: the hub asks on parley.to.<node>.<what> from its
// inbox, the node answers a nodeAnswer.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/parleyhq/parley/internal/gitwork"
)

// ErrNodeSlow is a node that did not answer in time: what was asked may
// still happen there.
var ErrNodeSlow = errors.New("the machine did not answer in time")

// nodeAnswer is a node's answer: the result as JSON, or why not. Code is a
// gitwork code; Chat a chat error carried by its place in chatErrors (from
// 1), as an input's refusal is.
type nodeAnswer struct {
	Result json.RawMessage `json:"result,omitempty"`
	Code   string          `json:"code,omitempty"`
	Chat   int             `json:"chat,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// answerOf is the answer for a result or an error.
func answerOf(v any, err error) nodeAnswer {
	if err != nil {
		return nodeAnswer{Code: gitwork.CodeOf(err), Chat: chatErrorCode(err), Error: err.Error()}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nodeAnswer{Error: "the answer cannot be sent: " + err.Error()}
	}
	return nodeAnswer{Result: b}
}

// askNode sends req to node's subject what and decodes its answer's result
// into res. The error is the node's own (its gitwork code or chat error
// kept, its words prefixed with the machine), ErrNodeOffline when nothing
// answers there, ErrNodeSlow when the answer does not come within timeout.
func (h *Hub) askNode(ctx context.Context, node, subject, what string, timeout time.Duration, req, res any) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	data, err := h.request(ctx, node, subject, what, timeout, b)
	if err != nil {
		return err
	}
	var ans nodeAnswer
	if err := json.Unmarshal(data, &ans); err != nil {
		return fmt.Errorf("cluster: machine %s answered something that is not JSON", node)
	}
	switch {
	case ans.Code != "":
		return &gitwork.Error{Code: ans.Code, Message: "machine " + node + ": " + ans.Error}
	case ans.Chat > 0 && ans.Chat <= len(chatErrors):
		return &Refusal{Reason: "machine " + node + ": " + ans.Error, Err: chatErrors[ans.Chat-1]}
	case ans.Error != "":
		return fmt.Errorf("machine %s: %s", node, ans.Error)
	}
	if err := json.Unmarshal(ans.Result, res); err != nil {
		return fmt.Errorf("cluster: machine %s answered %s with something unexpected: %v", node, what, err)
	}
	return nil
}

// request is one request to node and its answer's bytes.
func (h *Hub) request(ctx context.Context, node, subject, what string, timeout time.Duration, data []byte) ([]byte, error) {
	asked, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	m, err := h.nc.RequestWithContext(asked, subject, data)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		if st, ok := h.nodeStatus(ctx, node); ok && st.Online {
			// Listed online yet nobody listens: gone a moment ago, or a
			// parley from before this request (protocol.go lets them link).
			return nil, fmt.Errorf("%w: %s answers nothing for %s: it has just gone, or its parley is older than the hub's and does not do this (upgrade it)", ErrNodeOffline, node, what)
		}
		return nil, fmt.Errorf("%w: %s (asked for %s)", ErrNodeOffline, node, what)
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return nil, fmt.Errorf("%w: machine %s did not answer %s within %v", ErrNodeSlow, node, what, timeout)
	case err != nil:
		return nil, fmt.Errorf("cluster: ask machine %s for %s: %w", node, what, err)
	}
	return m.Data, nil
}

// serveAsks answers the hub's requests on subject, one at a time (a
// subscription's messages come in order on one goroutine), with answer's
// result or error.
func (l *Link) serveAsks(subject string, answer func(data []byte) (any, error)) error {
	return l.serveHub(subject, func(m *nats.Msg) {
		l.respond(m, answerOf(answer(m.Data)))
	})
}

func (l *Link) respond(m *nats.Msg, a nodeAnswer) {
	b, _ := json.Marshal(a)
	if err := m.Respond(b); err != nil {
		l.log.Warn("cluster: answer the hub's request", "subject", m.Subject, "err", err)
	}
}
