package daemon_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
)

// The idle tests assert order (what the thread's log says happened before
// what) and never measure a duration: the turns' own pauses make a thread busy
// for many times its idle timeout, whatever the machine's load.

func idleAfter(d time.Duration) func(*config.Config) {
	return func(c *config.Config) { c.Agents[0].IdleTimeout = config.Duration{Duration: d} }
}

// sessionStates lists the thread's session lifecycle events (started, resumed,
// unloaded, exited; not "identified", which only names the session, nor
// "starting", which comes before each start) with the index of each in evs.
func sessionStates(evs []client.Event) (states []string, at []int) {
	for i, ev := range evs {
		if st := chatsock.FieldOf(ev, "state"); ev.Type == chat.TypeSessionInfo && st != "identified" && st != "starting" {
			states = append(states, fmt.Sprint(chatsock.FieldOf(ev, "state")))
			at = append(at, i)
		}
	}
	return states, at
}

// threadOf returns the thread the connection was shown last.
func threadOf(t *testing.T, c *chatsock.Conn) chat.Thread {
	t.Helper()
	var th chat.Thread
	for _, ev := range c.Snapshot() {
		if ev.Type == chat.TypeThread {
			var te chat.ThreadEvent
			if err := ev.Decode(&te); err != nil {
				t.Fatal(err)
			}
			th = te.Thread
		}
	}
	if th.ID == "" {
		t.Fatal("no thread event on the connection")
	}
	return th
}

// restThread reads a thread through the REST API.
func (e *testEnv) restThread(id chat.ThreadID) (chat.Thread, int) {
	e.t.Helper()
	var got struct {
		Thread chat.Thread `json:"thread"`
	}
	code := e.getJSON("/api/threads/"+string(id), &got)
	return got.Thread, code
}

// TestIdleNotDuringQueuedTurns: a thread whose queue keeps it busy for ten
// times its idle timeout is never unloaded between or inside its turns; the
// unload comes after the last turn, and the whole conversation ran on one
// session.
func TestIdleNotDuringQueuedTurns(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, idleAfter(100*time.Millisecond))
	c := e.ready("busy")
	// Four turns of 6 chunks 50 ms apart: at least a second of work in all.
	const turns = 4
	for i := 1; i <= turns; i++ {
		c.Send(chatsock.Msg(fmt.Sprintf("m%d", i), "stream 6 50ms"))
	}
	last := c.WaitFor(0, 30*time.Second, chatsock.PromptDone(fmt.Sprintf("m%d", turns), chat.StopEndTurn), "the last turn")
	unloaded := c.WaitFor(0, 30*time.Second, chatsock.Field(chat.TypeSessionInfo, "state", "unloaded"), "the idle unload after the last turn")
	evs := c.Snapshot()
	for i := 1; i <= turns; i++ {
		j := c.WaitFor(0, time.Second, chatsock.PromptDone(fmt.Sprintf("m%d", i), chat.StopEndTurn), "each turn ends normally")
		if j > unloaded {
			t.Fatalf("m%d ended after the unload:\n%s", i, chatsock.Summary(evs))
		}
	}
	if unloaded < last {
		t.Fatalf("unloaded at %d, before the last turn ended at %d:\n%s", unloaded, last, chatsock.Summary(evs))
	}
	if states, _ := sessionStates(evs); strings.Join(states, ",") != "started,unloaded" {
		t.Fatalf("session events %v, want one start and one unload", states)
	}
	if got := e.drv.Starts(); got != 1 {
		t.Fatalf("sessions started: %d, want 1 for the whole conversation", got)
	}
}

// TestIdleDeadlineBumpedByEachTurn: a conversation that goes on longer than the
// idle timeout, each message sent when the previous answer is done, stays on
// its first session; only once it stops does the session unload.
func TestIdleDeadlineBumpedByEachTurn(t *testing.T) {
	t.Parallel()
	const timeout = 2 * time.Second
	e := startDaemon(t, idleAfter(timeout))
	c := e.ready("talk")
	// Each turn is 5 chunks 100 ms apart (at least 400 ms); eight of them keep
	// the thread talking for over 3 s, past the 2 s timeout. The gap between a
	// prompt_done and the next message is the test's reaction time.
	const turns = 8
	for i := 1; i <= turns; i++ {
		id := fmt.Sprintf("m%d", i)
		c.Send(chatsock.Msg(id, "stream 5 100ms"))
		c.WaitFor(0, 30*time.Second, chatsock.PromptDone(id, chat.StopEndTurn), id)
	}
	states, _ := sessionStates(c.Snapshot())
	if strings.Join(states, ",") != "started" {
		t.Fatalf("session events during the conversation: %v, want only the start (no unload, no resume)", states)
	}
	if got := e.drv.Starts(); got != 1 {
		t.Fatalf("sessions started: %d, want 1", got)
	}
	// Left alone, it unloads.
	c.WaitFor(0, 30*time.Second, chatsock.Field(chat.TypeSessionInfo, "state", "unloaded"), "the unload once the talk stops")
}

// TestClosingEveryTabKeepsTheThread: with every tab of a thread closed, the
// thread stays open and its session stays loaded (its idle deadline, an hour
// away, has not come); a tab opened later finds the same thread on the same
// session, and the next message runs without a restart.
func TestClosingEveryTabKeepsTheThread(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, idleAfter(time.Hour))
	a := e.dial("tabs", -1)
	b := e.dial("tabs", -1)
	a.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypeReplayDone), "a ready")
	b.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypeReplayDone), "b ready")
	a.Send(chatsock.Msg("m1", "say first"))
	b.WaitFor(0, 5*time.Second, chatsock.PromptDone("m1", chat.StopEndTurn), "first turn on b")
	i := a.WaitFor(0, 5*time.Second, chatsock.PromptDone("m1", chat.StopEndTurn), "first turn on a")
	th, _ := e.restThread(threadOf(t, a).ID)
	if th.SessionID == "" {
		t.Fatalf("thread %s has no session id after a turn", th.ID)
	}
	before := a.Get(i).Seq
	for _, c := range []*chatsock.Conn{a, b} {
		if err := c.Client().Close(); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Eventually(t, 10*time.Second, func() bool { return e.metric("parley_connections") == 0 }, "both tabs gone")
	// A turn on another thread runs through the daemon after the tabs closed.
	o := e.ready("other")
	o.Send(chatsock.Msg("o1", "say elsewhere"))
	o.WaitFor(0, 5*time.Second, chatsock.PromptDone("o1", chat.StopEndTurn), "a turn elsewhere")

	if got := e.drv.Closed(); got != 0 {
		t.Fatalf("sessions closed after the tabs closed: %d, want 0", got)
	}
	if got := e.metric("parley_live_sessions"); got != 2 {
		t.Fatalf("parley_live_sessions: %v, want 2 (the tabless thread's and the other's)", got)
	}
	got, code := e.restThread(th.ID)
	if code != http.StatusOK || got.State != chat.ThreadIdle || got.SessionID != th.SessionID {
		t.Fatalf("thread after its tabs closed: HTTP %d, %+v; want it open, idle, on session %s", code, got, th.SessionID)
	}
	// A new tab on the same chat: the same thread, nothing happened to its
	// session in between, and the next message runs on it.
	c := e.dial("tabs", before)
	c.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypeReplayDone), "new tab ready")
	if again := threadOf(t, c); again.ID != th.ID {
		t.Fatalf("the chat is on thread %s now, want %s", again.ID, th.ID)
	}
	if states, _ := sessionStates(c.Snapshot()); len(states) != 0 {
		t.Fatalf("session events since the tabs closed: %v, want none", states)
	}
	c.Send(chatsock.Msg("m2", "say again"))
	c.WaitFor(0, 5*time.Second, chatsock.PromptDone("m2", chat.StopEndTurn), "the next turn")
	if n, r := e.drv.Starts(), e.drv.Resumes(); n != 2 || len(r) != 0 {
		t.Fatalf("starts %d, resumes %v: want 2 starts (one per thread) and no resume", n, r)
	}
	if states, _ := sessionStates(c.Snapshot()); len(states) != 0 {
		t.Fatalf("session events around the next turn: %v, want none", states)
	}
}

// TestIdleUnloadWithNoTabOpen: the idle deadline applies to a thread with no
// tab open; the unload leaves the thread open, and a tab opened later sees the
// unload in the log and brings the session back by resuming it.
func TestIdleUnloadWithNoTabOpen(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, idleAfter(300*time.Millisecond))
	a := e.ready("gone")
	a.Send(chatsock.Msg("m1", "say first"))
	a.WaitFor(0, 5*time.Second, chatsock.PromptDone("m1", chat.StopEndTurn), "first turn")
	th, _ := e.restThread(threadOf(t, a).ID)
	if th.SessionID == "" {
		t.Fatalf("thread %s has no session id after a turn", th.ID)
	}
	if err := a.Client().Close(); err != nil {
		t.Fatal(err)
	}
	// The gauge falls when the session is let go of; the thread's row says
	// so once the lane has committed it: wait for both.
	testkit.Eventually(t, 10*time.Second, func() bool { return e.metric("parley_live_sessions") == 0 }, "the session unloaded")
	var got chat.Thread
	var code int
	testkit.Eventually(t, 10*time.Second, func() bool {
		got, code = e.restThread(th.ID)
		return code != http.StatusOK || got.State != chat.ThreadIdle
	}, "the thread still says idle after the unload")
	if code != http.StatusOK || got.State != chat.ThreadUnloaded {
		t.Fatalf("thread after the unload: HTTP %d, %+v; want it open and unloaded", code, got)
	}
	c := e.dial("gone", 0)
	c.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypeReplayDone), "new tab ready")
	if again := threadOf(t, c); again.ID != th.ID {
		t.Fatalf("the chat is on thread %s now, want %s", again.ID, th.ID)
	}
	c.Send(chatsock.Msg("m2", "say again"))
	i := c.WaitFor(0, 5*time.Second, chatsock.PromptDone("m2", chat.StopEndTurn), "the resumed turn")
	// Up to m2's end: 300 ms after it the session unloads again, which a
	// loaded machine may show before the snapshot is read.
	if states, _ := sessionStates(c.Snapshot()[:i+1]); strings.Join(states, ",") != "started,unloaded,resumed" {
		t.Fatalf("session events %v, want started, unloaded, resumed", states)
	}
	if r := e.drv.Resumes(); len(r) != 1 || r[0] != th.SessionID {
		t.Fatalf("resumes %v, want the first session %s", r, th.SessionID)
	}
}
