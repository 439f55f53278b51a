package remote

import (
	"context"
	"errors"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/router"
)

// What the hub hands a node for one of its threads (cluster.Hub.Request):
// a message, a new thread with its first message, or a control. Thread is
// the node's own id. Written and read here only, by the same binary.
type clusterInput struct {
	Kind    string          `json:"kind"` // "send", "new", "control", "failed"
	From    chat.RouteKey   `json:"from"` // the route at the hub
	Thread  chat.ThreadID   `json:"thread,omitempty"`
	Message *router.Message `json:"message,omitempty"`
	Control *router.Control `json:"control,omitempty"`
	// Reason is why a "failed" message never reached this node in time. A
	// hub now keeps such a message itself (remoteFailures); a record an
	// older hub queued, still in its stream across an upgrade, is applied.
	Reason string `json:"reason,omitempty"`
	// Ask is the hub's ask a "new" thread is for (router.NewIntent.Ask):
	// asked again, the node answers the thread it made for it.
	Ask string `json:"ask,omitempty"`
}

// sendResult is a node's answer to a send or a new thread.
type sendResult struct {
	Thread   chat.ThreadID `json:"thread"`
	Delivery chat.Delivery `json:"delivery"`
	// Duplicate: the route sent that message before (a resend); Delivery
	// is the receipt it has now.
	Duplicate bool `json:"duplicate,omitempty"`
}

// hubChannel is the channel of routes at the hub as a node's router keeps
// them: "hub", with the hub's route as the chat.
const hubChannel = "hub"

// refusal makes a router error the node's answer to a message: a limit that
// passes (the thread's queue full, the new-thread rate, the agent sessions
// cap) is tried again by the hub, the message kept in its queue, as are
// shutting down and running out of time; anything else is the input's end.
func refusal(err error) error {
	if errors.Is(err, chat.ErrBusy) || errors.Is(err, chat.ErrRateLimited) || errors.Is(err, chat.ErrSessionLimit) {
		return err
	}
	return controlRefusal(err)
}

// controlRefusal makes a router error the node's answer to a control: asked
// now and never kept (cluster.Hub.Ask), so only shutting down and running out
// of time are not its end.
func controlRefusal(err error) error {
	if err == nil || errors.Is(err, chat.ErrClosed) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return err
	}
	return cluster.Refuse(err)
}

func waitsFor(node string) string { return "waits for machine " + node }

// inputID is a message's id at its node's input stream: a message id is
// its route's, so two routes' equal ids stay two inputs.
func inputID(from chat.RouteKey, messageID string) string { return from.String() + "/" + messageID }
