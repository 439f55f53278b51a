package cluster

import (
	"fmt"
	"time"

	"github.com/parleyhq/parley/internal/chat"
)

// NotJoinedError says a machine named at the hub is not joined to it: it was
// revoked (Revoked is when), or it never joined. Its threads cannot be
// reached from the hub; the words say how to join it again. It is
// chat.ErrNotFound to errors.Is.
type NotJoinedError struct {
	Node    string
	Revoked time.Time // zero: it never joined
}

func (e *NotJoinedError) Error() string {
	if !e.Revoked.IsZero() {
		return fmt.Sprintf("machine %s was revoked at this hub (%s): nothing reaches it from here; %s",
			e.Node, e.Revoked.UTC().Format("2006-01-02 15:04 MST"), JoinAgain(e.Node))
	}
	return fmt.Sprintf("no machine %s has joined this hub: nothing reaches it from here; %s", e.Node, JoinAgain(e.Node))
}

func (e *NotJoinedError) Unwrap() error { return chat.ErrNotFound }

// JoinAgain says how a machine joins the hub (again): the hub's token, the
// machine's join, its restart (docs/multi-machine.md).
func JoinAgain(node string) string {
	return fmt.Sprintf("to join it, run `parley join-token --name %s` on the hub, then `parley join <token>` on %s and restart its `parley serve`", node, node)
}

// NotJoined is nil when node is joined to this hub, else why not.
func (h *Hub) NotJoined(node string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.reg.find(node); ok {
		return nil
	}
	return &NotJoinedError{Node: node, Revoked: h.reg.Revoked[node]}
}
