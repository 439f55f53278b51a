package schedule

import (
	"context"
	"errors"
	"fmt"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/router"
)

// Sender is the router's one send path (router.Router.Send).
type Sender interface {
	Send(ctx context.Context, req router.SendRequest) (chat.Delivery, chat.ThreadID, error)
}

// Target is where a run of a schedule or a trigger goes: a thread named
// (Thread), a new thread each run (NewEach), or else a thread of its own,
// made by its first run and used by the next ones (last).
type Target struct {
	Agent   string
	Cwd     string
	Thread  chat.ThreadID
	NewEach bool
}

// Check refuses what cannot be a target, before it is kept.
func (t Target) Check() error {
	switch {
	case t.Agent == "":
		return chat.BadInput("\"agent\" is missing: name the agent that runs it")
	case t.Cwd == "":
		return chat.BadInput("\"cwd\" is missing: give the working directory")
	case t.Thread != "" && t.NewEach:
		return chat.BadInput("\"thread\" and \"new\" both given: choose one")
	}
	return nil
}

// Run sends one run: the message id names the run (a schedule's due time, a
// webhook's delivery id), so the router takes it once whatever happens
// before it is recorded as run. last is the thread the previous run went to.
func Run(ctx context.Context, send Sender, t Target, route chat.RouteKey, messageID, text string,
	origin chat.Origin, last chat.ThreadID) (chat.ThreadID, error) {
	m := router.Message{MessageID: messageID, Text: text, Origin: &origin}
	req := router.SendRequest{From: route, Message: m}
	switch {
	case t.Thread != "":
		req.Thread = t.Thread
	case !t.NewEach && last != "":
		req.Thread = last
	default:
		req.Message.Intent = &router.Intent{New: &router.NewIntent{Cwd: t.Cwd, Agent: t.Agent}}
	}
	_, th, err := send.Send(ctx, req)
	if t.Thread == "" && req.Thread != "" && errors.Is(err, chat.ErrNotFound) {
		// Its own thread was deleted: the run starts another.
		req.Thread = ""
		req.Message.Intent = &router.Intent{New: &router.NewIntent{Cwd: t.Cwd, Agent: t.Agent}}
		_, th, err = send.Send(ctx, req)
	}
	if errors.Is(err, chat.ErrDuplicate) {
		return th, nil // ran before: a restart or a retry
	}
	if err != nil {
		return "", fmt.Errorf("run %s: %w", messageID, err)
	}
	return th, nil
}
