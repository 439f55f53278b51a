package cluster

// The hub's end of the work on a node's thread (node_work.go is the other
// end): the node commits, pushes, opens the pull request, reads files and
// the terminal's pane in its own working tree; the hub asks and answers
// with the node's result or its words.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/filetree"
	"github.com/parleyhq/parley/internal/gitwork"
)

const (
	// shipTimeout bounds a commit (hooks run), push or pull request on the
	// node, within the node's two minutes to answer (nodePermissions).
	shipTimeout = 100 * time.Second
	// terminalTimeout bounds one read of a pane or one typing.
	terminalTimeout = 5 * time.Second
	// MaxNodeRaw is the largest file a node sends raw (an image): as base64
	// in JSON it stays under NATS's message size.
	MaxNodeRaw = 4 << 20
)

const (
	opCommit = "commit"
	opPush   = "push"
	opPR     = "pr"
)

// shipRequest asks a node to commit, push or open a pull request for its
// thread. ID names the asking: the same ID asked again is answered, not
// done again.
type shipRequest struct {
	Op      string        `json:"op"`
	ID      string        `json:"id"`
	Thread  chat.ThreadID `json:"thread"`
	Message string        `json:"message,omitempty"`
	Title   string        `json:"title,omitempty"`
	Body    string        `json:"body,omitempty"`
}

// filesRequest asks for a listing or a file's text (Raw: its bytes).
type filesRequest struct {
	Thread chat.ThreadID `json:"thread"`
	filetree.Query
	Raw bool `json:"raw,omitempty"`
}

// terminalRequest asks for the pane's screen, or types Type into it.
type terminalRequest struct {
	Thread chat.ThreadID `json:"thread"`
	Type   string        `json:"type,omitempty"`
}

// maxShipID bounds a ship request's id (request_id): the node keeps each
// answer by it for a week.
const maxShipID = 128

// checkShipID refuses a request_id too long or with control characters.
func checkShipID(id string) error {
	if len(id) > maxShipID {
		return fmt.Errorf("%w: request_id is longer than %d bytes", chat.ErrBadInput, maxShipID)
	}
	if strings.ContainsFunc(id, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return fmt.Errorf("%w: request_id has a control character", chat.ErrBadInput)
	}
	return nil
}

func (h *Hub) ship(ctx context.Context, node string, req shipRequest, res any) error {
	if err := checkShipID(req.ID); err != nil {
		return err
	}
	if req.ID == "" {
		req.ID = chat.NewID("ship")
	}
	err := h.askWork(ctx, node, shipSubject(node), "repositories", shipTimeout, req, res)
	if errors.Is(err, ErrNodeSlow) {
		return fmt.Errorf("%w; it may still happen there: ask again with request_id %s to hear how it ended (it is not done twice)", err, req.ID)
	}
	return err
}

// NodeCommit commits node's thread's working tree (thread is the node's
// own id); id names this asking (empty: a new one).
func (h *Hub) NodeCommit(ctx context.Context, node string, thread chat.ThreadID, id, message string) (gitwork.Committed, error) {
	var c gitwork.Committed
	err := h.ship(ctx, node, shipRequest{Op: opCommit, ID: id, Thread: thread, Message: message}, &c)
	return c, err
}

// NodePush pushes node's thread's branch.
func (h *Hub) NodePush(ctx context.Context, node string, thread chat.ThreadID, id string) (gitwork.Pushed, error) {
	var p gitwork.Pushed
	err := h.ship(ctx, node, shipRequest{Op: opPush, ID: id, Thread: thread}, &p)
	return p, err
}

// NodePR opens the pull request of node's thread's branch, or finds its page.
func (h *Hub) NodePR(ctx context.Context, node string, thread chat.ThreadID, id, title, body string) (gitwork.PullRequest, error) {
	var pr gitwork.PullRequest
	err := h.ship(ctx, node, shipRequest{Op: opPR, ID: id, Thread: thread, Title: title, Body: body}, &pr)
	return pr, err
}

// NodeFiles reads a listing or a file in node's thread's directory.
func (h *Hub) NodeFiles(ctx context.Context, node string, thread chat.ThreadID, q filetree.Query) (filetree.View, error) {
	var v filetree.View
	err := h.askWork(ctx, node, filesSubject(node), "files", sourceTimeout, filesRequest{Thread: thread, Query: q}, &v)
	return v, err
}

// NodeRaw reads a file's bytes (at most MaxNodeRaw) in node's thread's directory.
func (h *Hub) NodeRaw(ctx context.Context, node string, thread chat.ThreadID, q filetree.Query) ([]byte, error) {
	var b []byte
	err := h.askWork(ctx, node, filesSubject(node), "files", sourceTimeout, filesRequest{Thread: thread, Query: q, Raw: true}, &b)
	return b, err
}

// NodeTerminal is node's thread's terminal, read and typed into on the node.
func (h *Hub) NodeTerminal(node string, thread chat.ThreadID) driver.Terminal {
	return nodeTerminal{h: h, node: node, thread: thread}
}

type nodeTerminal struct {
	h      *Hub
	node   string
	thread chat.ThreadID
}

func (t nodeTerminal) Screen(ctx context.Context) (driver.Screen, error) {
	var sc driver.Screen
	err := t.h.askWork(ctx, t.node, terminalSubject(t.node), "terminals", terminalTimeout, terminalRequest{Thread: t.thread}, &sc)
	return sc, err
}

func (t nodeTerminal) Type(ctx context.Context, text string) error {
	var done struct{}
	return t.h.askWork(ctx, t.node, terminalSubject(t.node), "terminals", terminalTimeout, terminalRequest{Thread: t.thread, Type: text}, &done)
}
