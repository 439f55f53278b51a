package daemon_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/scriptd"
)

// metric reads one sample from the daemon's /metrics: name is the full series as
// Prometheus prints it (e.g. `parley_socket_closed_total{reason="slow"}`). A
// series not shown reads as 0.
func (e *testEnv) metric(series string) float64 {
	e.t.Helper()
	return scriptd.Metric(e.t, e.url(), e.d.Token(), series)
}

// seqs lists the sequenced events' seqs, in the order received.
func seqs(evs []client.Event) []int64 {
	var out []int64
	for _, ev := range evs {
		if ev.Seq != 0 {
			out = append(out, ev.Seq)
		}
	}
	return out
}

// A thread whose queue is full answers a message with an `error` "busy" and
// stores nothing of it; the connection and the thread go on.
func TestFullQueueAnswersBusyAndStoresNothing(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, func(c *config.Config) { c.Limits.QueueDepth = 2 })
	c := e.ready("busy")
	// A turn that never ends by itself holds the lane; two messages queue behind it.
	c.Send(chatsock.Msg("h", "hang"))
	c.WaitFor(0, 10*time.Second, chatsock.Delivery("h", chat.DeliverySubmitted), "the hanging turn runs")
	c.Send(chatsock.Msg("q1", "say first queued"))
	c.Send(chatsock.Msg("q2", "say second queued"))
	c.WaitFor(0, 10*time.Second, chatsock.Delivery("q1", chat.DeliveryQueued), "q1 queued")
	c.WaitFor(0, 10*time.Second, chatsock.Delivery("q2", chat.DeliveryQueued), "q2 queued")
	// The queue is full: each further message is refused as busy, naming itself.
	for _, id := range []string{"b1", "b2"} {
		from := c.Len()
		c.Send(chatsock.Msg(id, "say never "+id))
		i := c.WaitFor(from, 10*time.Second, chatsock.Type(chat.TypeError), "an error for "+id)
		ev := c.Get(i)
		if chatsock.FieldOf(ev, "code") != chat.CodeBusy || chatsock.FieldOf(ev, "ref") != id ||
			!strings.Contains(fmt.Sprint(chatsock.FieldOf(ev, "message")), "busy") {
			t.Fatalf("%s: got %s, want an error with code busy, ref %s, saying the thread is busy", id, ev.Raw, id)
		}
		if ev.Seq != 0 {
			t.Fatalf("%s: the busy error was logged (seq %d); it is for this connection only", id, ev.Seq)
		}
	}
	// The connection goes on.
	from := c.Len()
	c.Send(map[string]any{"type": "ping"})
	c.WaitFor(from, 10*time.Second, chatsock.Type(chat.TypePong), "pong while busy")
	// Stop ends the hanging turn (the lane's stop grace, as the agent ignores
	// it); the queued messages then run.
	c.Send(map[string]any{"type": "stop"})
	c.WaitFor(0, 30*time.Second, chatsock.PromptDone("h", chat.StopCancelled), "the hanging turn stopped")
	c.WaitFor(0, 30*time.Second, chatsock.PromptDone("q1", chat.StopEndTurn), "q1 ran")
	i := c.WaitFor(0, 30*time.Second, chatsock.PromptDone("q2", chat.StopEndTurn), "q2 ran")
	c.WaitFor(i, 10*time.Second, chatsock.Field(chat.TypeTurnStatus, "active", false), "turn over")
	// Nothing of the refused messages was stored: the thread's log (as a new
	// connection replays it) has neither their text nor a receipt, and the agent
	// never got them.
	r := e.dial("busy", 0)
	end := r.WaitFor(0, 10*time.Second, chatsock.Type(chat.TypeReplayDone), "replay")
	users := 0
	for _, ev := range r.Snapshot()[:end] {
		if strings.Contains(string(ev.Raw), "never b") || strings.Contains(string(ev.Raw), `"b1"`) || strings.Contains(string(ev.Raw), `"b2"`) {
			t.Errorf("a refused message left a trace in the log: %s", ev.Raw)
		}
		if ev.Type == chat.TypeUserMessage {
			users++
		}
	}
	if users != 3 {
		t.Errorf("the log has %d user messages, want 3 (h, q1, q2)", users)
	}
	var ids []string
	for _, p := range e.drv.Prompts() {
		ids = append(ids, p.MessageID)
	}
	if strings.Join(ids, ",") != "h,q1,q2" {
		t.Errorf("the agent got %v, want [h q1 q2]", ids)
	}
	// The thread goes on, and a refused id was never taken: sent again now that
	// there is room, it is a new message, delivered.
	c.Send(chatsock.Msg("b1", "say now b1"))
	c.WaitFor(0, 30*time.Second, chatsock.PromptDone("b1", chat.StopEndTurn), "b1 accepted once there is room")
	c.WaitFor(0, 10*time.Second, chatsock.Field(chat.TypeAgentChunk, "text", "now b1"), "b1's answer")
}

// Without since, a new connection gets the log's last ReplayTail events, then
// replay_done; with since, exactly what it lacks, however many.
func TestReplayTailWithoutSince(t *testing.T) {
	t.Parallel()
	const tail = 5
	e := startDaemon(t, func(c *config.Config) { c.Limits.ReplayTail = tail })
	a := e.ready("tail")
	a.Send(chatsock.Msg("m1", "say one\nsay two\nsay three\nsay four\nsay five\nsay six"))
	i := a.WaitFor(0, 10*time.Second, chatsock.PromptDone("m1", chat.StopEndTurn), "first turn")
	a.Send(chatsock.Msg("m2", "stream 8 1ms"))
	i = a.WaitFor(i, 10*time.Second, chatsock.PromptDone("m2", chat.StopEndTurn), "second turn")
	a.WaitFor(i, 10*time.Second, chatsock.Field(chat.TypeTurnStatus, "active", false), "turn over")
	// The whole log, as a connection with since=0 replays it. (The first
	// connection may have missed the thread's first events: it was on the route
	// before the thread existed, and a route switching thread shows the new
	// thread's tail.)
	full := e.dial("tail", 0)
	fEnd := full.WaitFor(0, 10*time.Second, chatsock.Type(chat.TypeReplayDone), "full replay")
	all := seqs(full.Snapshot()[:fEnd])
	for k, s := range all {
		if s != int64(k+1) {
			t.Fatalf("the full replay %v: want 1..n without gaps", all)
		}
	}
	last := all[len(all)-1]
	if last <= 3*tail {
		t.Fatalf("the log has only %d events; the test needs far more than the tail of %d", last, tail)
	}
	// A new connection without since: the last five, in order, then replay_done.
	b := e.dial("tail", -1)
	end := b.WaitFor(0, 10*time.Second, chatsock.Type(chat.TypeReplayDone), "replay_done")
	got := seqs(b.Snapshot()[:end])
	want := []int64{last - 4, last - 3, last - 2, last - 1, last}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("replay without since: seqs %v, want %v", got, want)
	}
	live := map[int64]string{}
	for _, ev := range full.Snapshot()[:fEnd] {
		if ev.Seq != 0 {
			live[ev.Seq] = string(ev.Raw)
		}
	}
	for _, ev := range b.Snapshot()[:end] {
		if ev.Seq != 0 && string(ev.Raw) != live[ev.Seq] {
			t.Errorf("event %d differs between the tail and the full replay:\n tail %s\n full %s", ev.Seq, ev.Raw, live[ev.Seq])
		}
	}
	if ld := chatsock.FieldOf(b.Get(end), "last_seq"); fmt.Sprint(ld) != fmt.Sprint(last) {
		t.Errorf("replay_done last_seq %v, want %d", ld, last)
	}
	// With since, the tail does not cut the replay: everything after seq 1.
	c := e.dial("tail", 1)
	cEnd := c.WaitFor(0, 10*time.Second, chatsock.Type(chat.TypeReplayDone), "replay_done")
	if got := seqs(c.Snapshot()[:cEnd]); fmt.Sprint(got) != fmt.Sprint(all[1:]) {
		t.Fatalf("replay since=1: seqs %v, want %v", got, all[1:])
	}
	// The tail is a view, not a cut: the thread goes on from where it was.
	b.Send(chatsock.Msg("m3", "say after"))
	j := b.WaitFor(end, 10*time.Second, chatsock.PromptDone("m3", chat.StopEndTurn), "a turn after the tail replay")
	if s := b.Get(j).Seq; s <= last {
		t.Fatalf("the next turn's prompt_done has seq %d, want it after %d", s, last)
	}
	testkit.Eventually(t, 10*time.Second, func() bool { return len(e.drv.Prompts()) == 3 }, "three prompts delivered")
}
