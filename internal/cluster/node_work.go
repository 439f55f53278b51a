package cluster

// The node's end of the hub's work on its threads (hub_work.go is the other
// end): commit, push and pull request; the file browser; the terminal.

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/filetree"
	"github.com/parleyhq/parley/internal/gitwork"
)

// Workspace is what a node does with its own threads' working trees when
// the hub asks (the daemon's; the same it does for its own dashboard).
type Workspace interface {
	Commit(ctx context.Context, thread chat.ThreadID, message string) (gitwork.Committed, error)
	Push(ctx context.Context, thread chat.ThreadID) (gitwork.Pushed, error)
	PR(ctx context.Context, thread chat.ThreadID, title, body string) (gitwork.PullRequest, error)
	Files(ctx context.Context, thread chat.ThreadID, q filetree.Query) (filetree.View, error)
	Raw(ctx context.Context, thread chat.ThreadID, q filetree.Query, limit int64) ([]byte, error)
	Terminal(ctx context.Context, thread chat.ThreadID) (driver.Terminal, error)
}

// ServeWork answers the hub's ship, files and terminal requests with ws,
// each kind on its own subject so a slow push does not hold a pane's view.
// Ship requests are taken one at a time and remembered by their id: one
// the hub sends again (a person retrying after a timeout) is answered with
// the first one's answer, never applied twice.
func (l *Link) ServeWork(ws Workspace) error {
	shipped := newIDSet(256)
	err := l.serveHub(shipSubject(l.opt.Node), func(m *nats.Msg) {
		var req shipRequest
		if err := json.Unmarshal(m.Data, &req); err != nil || req.ID == "" {
			l.respond(m, nodeAnswer{Chat: chatErrorCode(chat.ErrBadInput), Error: "a ship request must be JSON with an id"})
			return
		}
		// The subscription's messages come one at a time: a second asking
		// of one id waits here until the first is answered, then finds it.
		if b, ok := shipped.get(req.ID); ok {
			if err := m.Respond(b); err != nil {
				l.log.Warn("cluster: answer a ship request again", "err", err)
			}
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), shipTimeout)
		defer cancel()
		var a nodeAnswer
		switch req.Op {
		case opCommit:
			a = answerOf(ws.Commit(ctx, req.Thread, req.Message))
		case opPush:
			a = answerOf(ws.Push(ctx, req.Thread))
		case opPR:
			a = answerOf(ws.PR(ctx, req.Thread, req.Title, req.Body))
		default:
			a = answerOf(nil, fmt.Errorf("%w: no such ship request %q", chat.ErrBadInput, req.Op))
		}
		b, _ := json.Marshal(a)
		shipped.add(req.ID, b)
		if err := m.Respond(b); err != nil {
			l.log.Warn("cluster: answer a ship request", "op", req.Op, "err", err)
		}
	})
	if err != nil {
		return err
	}
	err = l.serveAsks(filesSubject(l.opt.Node), func(data []byte) (any, error) {
		var req filesRequest
		if err := json.Unmarshal(data, &req); err != nil {
			return nil, fmt.Errorf("%w: a files request must be JSON", chat.ErrBadInput)
		}
		ctx, cancel := context.WithTimeout(context.Background(), sourceTimeout)
		defer cancel()
		if req.Raw {
			return ws.Raw(ctx, req.Thread, req.Query, MaxNodeRaw)
		}
		return ws.Files(ctx, req.Thread, req.Query)
	})
	if err != nil {
		return err
	}
	return l.serveAsks(terminalSubject(l.opt.Node), func(data []byte) (any, error) {
		var req terminalRequest
		if err := json.Unmarshal(data, &req); err != nil {
			return nil, fmt.Errorf("%w: a terminal request must be JSON", chat.ErrBadInput)
		}
		ctx, cancel := context.WithTimeout(context.Background(), terminalTimeout)
		defer cancel()
		term, err := ws.Terminal(ctx, req.Thread)
		if err != nil {
			return nil, err
		}
		if req.Type != "" {
			return struct{}{}, term.Type(ctx, req.Type)
		}
		return term.Screen(ctx)
	})
}
