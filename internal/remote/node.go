package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/router"
)

// Inputs is a node's cluster.InputHandler (cluster.LinkOptions.Inputs):
// each input from its hub applied by rt.
func Inputs(rt *router.Router) cluster.InputHandler { return (&node{router: rt}).applyInput }

// node is a node's router as its hub's inputs reach it.
type node struct{ router *router.Router }

// applyInput applies one input from the hub on this node and returns once
// its router has committed it. A duplicate (the hub asked again) answers
// its current receipt; what can never be applied is refused with the chat
// error it is, so the sender at the hub gets that error.
func (n *node) applyInput(ctx context.Context, _ string, data []byte) ([]byte, error) {
	var in clusterInput
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, cluster.Refuse(fmt.Errorf("%w: an input from the hub that is not one: %v", chat.ErrBadInput, err))
	}
	from := chat.RouteKey{Channel: hubChannel, Chat: in.From.String()}
	switch {
	case (in.Kind == "send" || in.Kind == "new") && in.Message != nil:
		m := *in.Message
		if in.Kind == "new" {
			if m.Intent == nil || m.Intent.New == nil {
				return nil, cluster.Refuse(fmt.Errorf("%w: a new thread without its intent", chat.ErrBadInput))
			}
			nw := *m.Intent.New
			nw.Node, nw.Ask = "", in.Ask // here, for the hub's ask
			m.Intent = &router.Intent{New: &nw}
		}
		dl, th, err := n.router.Send(ctx, router.SendRequest{From: from, Thread: in.Thread, Message: m})
		dup := errors.Is(err, chat.ErrDuplicate)
		if dup {
			err = nil
		}
		if err != nil {
			return nil, refusal(err)
		}
		return json.Marshal(sendResult{Thread: th, Delivery: dl, Duplicate: dup})
	case in.Kind == "failed" && in.Message != nil:
		_, _, err := n.router.Send(ctx, router.SendRequest{From: from, Thread: in.Thread, Message: *in.Message, Failed: in.Reason})
		if errors.Is(err, chat.ErrDuplicate) {
			err = nil // it reached this node after all, or was recorded already
		}
		return nil, controlRefusal(err)
	case in.Kind == "control" && in.Control != nil:
		c := *in.Control
		c.From, c.Thread = from, in.Thread
		return nil, controlRefusal(n.router.Control(ctx, c))
	}
	return nil, cluster.Refuse(fmt.Errorf("%w: an input of kind %q", chat.ErrBadInput, in.Kind))
}
