package cluster

// The node's end of the hub's work on its threads (hub_work.go is the other
// end): commit, push and pull request; the file browser; the terminal.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

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

// ShipAnswers keeps the node's answers to ship requests by their key,
// across its restarts (the node's store).
type ShipAnswers interface {
	ShipAnswer(ctx context.Context, key string) ([]byte, error) // chat.ErrNotFound: none kept
	KeepShipAnswer(ctx context.Context, key string, answer []byte) error
}

// ServeWork answers the hub's ship, files and terminal requests with ws,
// each kind on its own subject so a slow push does not hold a pane's view.
// Ship requests are taken one at a time and their answers kept by their
// id (in memory, and in kept): one the hub sends again (a person retrying
// after a timeout, this node restarted meanwhile or not) is answered with
// the first one's answer, never applied twice.
func (l *Link) ServeWork(ws Workspace, kept ShipAnswers) error {
	shipped := newIDSet(256)
	// servePart answers one request at a time (a subscription's messages
	// come in order on one goroutine): a second asking of one id waits
	// until the first is answered, then finds it.
	err := l.servePartWithin(shipSubject(l.opt.Node), "repositories", shipTimeout, func(ctx context.Context, data []byte) []byte {
		var req shipRequest
		if err := json.Unmarshal(data, &req); err != nil || req.ID == "" {
			return answerOf(nil, fmt.Errorf("%w: a ship request must be JSON with an id", chat.ErrBadInput))
		}
		if err := checkShipID(req.ID); err != nil {
			return answerOf(nil, err)
		}
		// The same id for another thread or action is another request.
		key := req.Op + "\x00" + string(req.Thread) + "\x00" + req.ID
		if b, ok := shipped.get(key); ok {
			return b
		}
		if b, err := kept.ShipAnswer(ctx, key); err == nil {
			shipped.add(key, b)
			return b
		} else if !errors.Is(err, chat.ErrNotFound) {
			// Not applied: whether it was before cannot be told.
			return answerOf(nil, fmt.Errorf("read this machine's answers to earlier requests: %w", err))
		}
		var b []byte
		switch req.Op {
		case opCommit:
			b = answerOf(ws.Commit(ctx, req.Thread, req.Message))
		case opPush:
			b = answerOf(ws.Push(ctx, req.Thread))
		case opPR:
			b = answerOf(ws.PR(ctx, req.Thread, req.Title, req.Body))
		default:
			b = answerOf(nil, fmt.Errorf("%w: no such ship request %q", chat.ErrBadInput, req.Op))
		}
		shipped.add(key, b)
		if err := kept.KeepShipAnswer(ctx, key, b); err != nil {
			l.log.Warn("cluster: keep a ship request's answer (sent again after a restart, it would be applied again)", "op", req.Op, "thread", req.Thread, "err", err)
		}
		return b
	})
	if err != nil {
		return err
	}
	err = l.servePartWithin(filesSubject(l.opt.Node), "files", sourceTimeout, func(ctx context.Context, data []byte) []byte {
		var req filesRequest
		if err := json.Unmarshal(data, &req); err != nil {
			return answerOf(nil, fmt.Errorf("%w: a files request must be JSON", chat.ErrBadInput))
		}
		if req.Raw {
			return answerOf(ws.Raw(ctx, req.Thread, req.Query, MaxNodeRaw))
		}
		return answerOf(ws.Files(ctx, req.Thread, req.Query))
	})
	if err != nil {
		return err
	}
	return l.servePartWithin(terminalSubject(l.opt.Node), "terminals", terminalTimeout, func(ctx context.Context, data []byte) []byte {
		var req terminalRequest
		if err := json.Unmarshal(data, &req); err != nil {
			return answerOf(nil, fmt.Errorf("%w: a terminal request must be JSON", chat.ErrBadInput))
		}
		term, err := ws.Terminal(ctx, req.Thread)
		if err != nil {
			return answerOf(nil, err)
		}
		if req.Type != "" {
			return answerOf(struct{}{}, term.Type(ctx, req.Type))
		}
		return answerOf(term.Screen(ctx))
	})
}
