package daemon_test

import (
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
)

// resume_session with node continues a session on that machine: the hub's
// route shows the thread the machine made for it, and a message goes there.
func TestResumeSessionOnANodeThroughTheHub(t *testing.T) {
	hub := startHub(t)
	b := joinNode(t, hub, "b")

	s := hub.dial("phone", -1)
	s.WaitFor(0, 10*time.Second, chatsock.Type(chat.TypeReplayDone), "ready")
	s.Send(map[string]any{"type": "resume_session", "agent": "echo", "session_id": "sess-on-b", "cwd": b.root, "node": "b"})
	id := shownThread(s.Get(s.WaitFor(0, 10*time.Second, func(e client.Event) bool { return shownThread(e) != "" }, "the route's thread")))
	node, local, _ := cluster.SplitRemoteID(id)
	if node != "b" {
		t.Fatalf("the route shows %q, want a thread of machine b", id)
	}
	var got struct {
		Thread chat.Thread `json:"thread"`
	}
	if st := b.getJSON("/api/threads/"+string(local), &got); st != 200 || got.Thread.SessionID != "sess-on-b" || got.Thread.Cwd != b.root {
		t.Fatalf("b's thread %s: %d %+v; want session sess-on-b in %s", local, st, got.Thread, b.root)
	}
	at := s.Len()
	s.Send(chatsock.Msg("m1", "say hi"))
	s.WaitFor(at, 10*time.Second, chatsock.PromptDone("m1", chat.StopEndTurn), "the turn on b")

	// A machine the hub does not have is refused, saying so.
	at = s.Len()
	s.Send(map[string]any{"type": "resume_session", "agent": "echo", "session_id": "x", "cwd": b.root, "node": "nowhere"})
	s.WaitFor(at, 10*time.Second, chatsock.Type(chat.TypeError), "the refusal")
}
