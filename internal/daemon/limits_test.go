package daemon_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
)

// With every session slot taken, a thread that needs one unloads the least
// recently used idle session (it resumes on its next message, as after an idle
// unload); when none is idle, the message fails with words naming the limit,
// and nothing crashed: the next message, once a turn ended, goes.
func TestSessionCapUnloadsTheLeastRecentlyUsedIdleSession(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, func(c *config.Config) { c.Limits.MaxSessions = 2 })
	dial := func(chatID string) *chatsock.Conn {
		c := e.ready(chatID)
		return c
	}
	a, b, c := dial("cap-a"), dial("cap-b"), dial("cap-c")
	a.Send(chatsock.Msg("a1", "say a1"))
	a.WaitFor(0, 5*time.Second, chatsock.PromptDone("a1", chat.StopEndTurn), "a1")
	b.Send(chatsock.Msg("b1", "say b1"))
	b.WaitFor(0, 5*time.Second, chatsock.PromptDone("b1", chat.StopEndTurn), "b1")

	// A third session: a's, idle the longest, makes room.
	c.Send(chatsock.Msg("c1", "say c1"))
	c.WaitFor(0, 5*time.Second, chatsock.PromptDone("c1", chat.StopEndTurn), "c1 with a third session")
	a.WaitFor(0, 5*time.Second, chatsock.Field(chat.TypeSessionInfo, "state", "unloaded"), "a's idle session unloaded")
	if states, _ := sessionStates(b.Snapshot()); strings.Join(states, ",") != "started" {
		t.Errorf("b's sessions: got %v, want only started (b was used more recently than a)", states)
	}
	if got := e.metric("parley_live_sessions"); got != 2 {
		t.Errorf("parley_live_sessions: got %v, want 2", got)
	}

	// Both sessions busy: a's message cannot start a third, and says why.
	b.Send(chatsock.Msg("b2", "hang"))
	b.WaitFor(0, 5*time.Second, chatsock.Delivery("b2", chat.DeliverySubmitted), "b busy")
	c.Send(chatsock.Msg("c2", "hang"))
	c.WaitFor(0, 5*time.Second, chatsock.Delivery("c2", chat.DeliverySubmitted), "c busy")
	a.Send(chatsock.Msg("a2", "say a2"))
	i := a.WaitFor(0, 5*time.Second, chatsock.Delivery("a2", chat.DeliveryFailed), "a2 refused")
	detail := fmt.Sprint(chatsock.FieldOf(a.Get(i), "detail"))
	if !strings.Contains(detail, "2 agent sessions are running, the most limits.max_sessions allows, and none is idle") {
		t.Fatalf("a2's failure: got %q, want it to name the limit", detail)
	}
	if th, _ := e.restThread(threadOf(t, a).ID); th.State == chat.ThreadCrashed {
		t.Errorf("a's thread after the refusal: %s, want not crashed", th.State)
	}

	// A turn ends; a's next message takes that idle session's slot.
	b.Send(map[string]any{"type": "stop"})
	b.WaitFor(0, 5*time.Second, chatsock.Field(chat.TypePromptDone, "message_id", "b2"), "b2 stopped")
	a.Send(chatsock.Msg("a3", "say a3"))
	a.WaitFor(i, 5*time.Second, chatsock.PromptDone("a3", chat.StopEndTurn), "a3 once a session was idle")
	if got := e.metric("parley_live_sessions"); got > 2 {
		t.Errorf("parley_live_sessions: got %v, want at most 2", got)
	}
}

// New threads are capped a minute, over all channels, with words naming the
// limit; a refused first message leaves no thread and no input behind.
func TestThreadsPerMinuteCap(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, func(c *config.Config) { c.Limits.ThreadsPerMinute = 2 })
	for _, id := range []string{"t1", "t2"} {
		c := e.ready("rate-" + id)
		c.Send(chatsock.Msg(id, "say "+id))
		c.WaitFor(0, 5*time.Second, chatsock.PromptDone(id, chat.StopEndTurn), id)
	}
	c := e.ready("rate-t3")
	c.Send(chatsock.Msg("t3", "say t3"))
	i := c.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypeError), "the third thread refused")
	ev := c.Get(i)
	if chatsock.FieldOf(ev, "code") != chat.CodeRateLimit ||
		!strings.Contains(fmt.Sprint(chatsock.FieldOf(ev, "message")), "more than 2 new threads in a minute (limits.threads_per_minute)") {
		t.Fatalf("refusal: got %s, want rate_limited naming limits.threads_per_minute", ev.Raw)
	}
	var threads struct{ Threads []chat.Thread }
	e.getJSON("/api/threads", &threads)
	if len(threads.Threads) != 2 {
		t.Fatalf("threads: got %d, want 2", len(threads.Threads))
	}
}

// A data directory that already exists writable by others is narrowed to 0700
// at start, and the database, its -wal and -shm, and the token are 0600.
func TestDataDirectoryAndFilesAreOwnerOnly(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, func(c *config.Config) {
		if err := os.Mkdir(c.DataDir, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(c.DataDir, 0o777); err != nil {
			t.Fatal(err)
		}
	})
	c := e.ready("files")
	c.Send(chatsock.Msg("m1", "say hi")) // a write: the -wal and -shm exist
	c.WaitFor(0, 5*time.Second, chatsock.PromptDone("m1", chat.StopEndTurn), "m1")
	want := map[string]os.FileMode{"": 0o700, "token": 0o600, "parley.db": 0o600, "parley.db-wal": 0o600, "parley.db-shm": 0o600}
	for name, mode := range want {
		st, err := os.Stat(filepath.Join(e.cfg.DataDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != mode {
			t.Errorf("%s: mode %v, want %v", filepath.Join(e.cfg.DataDir, name), st.Mode().Perm(), mode)
		}
	}
}
