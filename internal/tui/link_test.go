package tui_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/coder/websocket"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/tui"
)

// msgLog keeps what a Link delivers.
type msgLog struct {
	mu   sync.Mutex
	msgs []tea.Msg
}

func (l *msgLog) deliver(m tea.Msg) { l.mu.Lock(); l.msgs = append(l.msgs, m); l.mu.Unlock() }

func (l *msgLog) snapshot() []tea.Msg {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]tea.Msg(nil), l.msgs...)
}

func (l *msgLog) count(match func(tea.Msg) bool) int {
	n := 0
	for _, m := range l.snapshot() {
		if match(m) {
			n++
		}
	}
	return n
}

func isOnline(m tea.Msg) bool  { _, ok := m.(tui.OnlineMsg); return ok }
func isOffline(m tea.Msg) bool { _, ok := m.(tui.OfflineMsg); return ok }

func runLink(t *testing.T, l *tui.Link) *msgLog {
	log := &msgLog{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); l.Run(ctx, log.deliver) }()
	t.Cleanup(func() { cancel(); <-done })
	return log
}

// TestLinkReconnectsWithSince: after the daemon comes back, the link asks for
// what it missed and nothing it already had.
func TestLinkReconnectsWithSince(t *testing.T) {
	current, restart, _ := startRestartable(t)
	d := current()
	l := tui.NewLink("http://"+d.Addr(), d.Token(), client.Options{Chat: "link", Since: -1}, nil)
	l.MinBackoff, l.MaxBackoff = 200*time.Millisecond, 400*time.Millisecond
	log := runLink(t, l)
	testkit.Eventually(t, 5*time.Second, func() bool { return log.count(isOnline) == 1 }, "not online")
	testkit.Eventually(t, 5*time.Second, func() bool {
		return l.Send(context.Background(), map[string]string{"type": "message", "message_id": "m1", "text": "say one"}) == nil
	}, "could not send")
	done := func(id string) func(tea.Msg) bool {
		return func(m tea.Msg) bool {
			e, ok := m.(tui.EventMsg)
			var p chat.PromptDone
			return ok && e.Event.Type == chat.TypePromptDone && e.Event.Decode(&p) == nil && p.MessageID == id
		}
	}
	testkit.Eventually(t, 5*time.Second, func() bool { return log.count(done("m1")) == 1 }, "turn m1 did not end")
	restart(true)
	testkit.Eventually(t, 10*time.Second, func() bool { return log.count(isOnline) == 2 && log.count(isOffline) >= 1 }, "did not come back")
	testkit.Eventually(t, 5*time.Second, func() bool {
		return l.Send(context.Background(), map[string]string{"type": "message", "message_id": "m2", "text": "say two"}) == nil
	}, "could not send after reconnecting")
	testkit.Eventually(t, 5*time.Second, func() bool { return log.count(done("m2")) == 1 }, "turn m2 did not end")
	// No log event came twice.
	seen := map[int64]int{}
	for _, m := range log.snapshot() {
		if e, ok := m.(tui.EventMsg); ok && e.Event.Seq > 0 {
			seen[e.Event.Seq]++
		}
	}
	for seq, n := range seen {
		if n != 1 {
			t.Errorf("seq %d delivered %d times, want once", seq, n)
		}
	}
	if log.count(done("m1")) != 1 {
		t.Errorf("prompt_done of m1 delivered %d times, want once", log.count(done("m1")))
	}
}

// TestLinkDropsASilentSocket: a socket that says nothing to pings is dropped
// and reported offline.
func TestLinkDropsASilentSocket(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			if _, _, err := c.Read(r.Context()); err != nil { // read pings, answer nothing
				return
			}
		}
	}))
	defer srv.Close()
	l := tui.NewLink(srv.URL, "tok", client.Options{Chat: "silent", Since: -1}, nil)
	l.PingEvery, l.MinBackoff = 20*time.Millisecond, time.Hour
	log := runLink(t, l)
	testkit.Eventually(t, 5*time.Second, func() bool { return log.count(isOffline) >= 1 }, "a silent socket was not dropped")
	if got := log.count(isOnline); got != 1 {
		t.Errorf("online %d times, want 1", got)
	}
}

func TestLinkGivesUpOnABadToken(t *testing.T) {
	t.Parallel()
	d, _ := startDaemon(t)
	l := tui.NewLink("http://"+d.Addr(), "wrong-token", client.Options{Chat: "bad", Since: -1}, nil)
	log := runLink(t, l)
	testkit.Eventually(t, 5*time.Second, func() bool {
		return log.count(func(m tea.Msg) bool { _, ok := m.(tui.FatalMsg); return ok }) == 1
	}, "no FatalMsg for a refused token")
}
