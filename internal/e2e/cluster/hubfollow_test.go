//go:build e2e

package cluster_test

import (
	"syscall"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
)

// Node b, a real `parley serve` process running Claude Code, is killed with
// kill -9; a phone opens the hub's chat on b's thread meanwhile (b does not
// answer: it shows the thread from the hub's copy of b's recent events) and
// sends a message, which waits for b. b is started again at once, likely
// before the hub counts it offline: the phone, with no reconnect, shows b's
// log after its since (each seq once, none missing), the message's receipts
// and Claude Code's answer.
func TestAViewOpenedWhileItsNodeIsKilledFollowsItsThreadWhenItIsBack(t *testing.T) {
	a := newAgentSetup(t)
	hub, nodes := startProcs(t, a, "b")
	node := nodes["b"]

	s := hub.dial("desk", -1, "")
	s.Send(newThreadMsg("m1", "hello", a.work))
	end := s.WaitFor(0, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "the first turn")
	id := shownThread(s.Get(s.WaitFor(0, wait, func(e client.Event) bool { return shownThread(e) != "" }, "the route's thread")))
	last := s.Get(end).Seq
	s.Client().Close()
	if err := node.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	node.cmd.Wait()
	for _, pid := range testkit.PIDsWithEnv("HOME="+a.home, "claude") {
		syscall.Kill(pid, syscall.SIGKILL) // the agent the killed daemon left
	}

	v := hub.dial("desk", last, id)
	fromCopy := false
	for _, e := range v.Snapshot() {
		if e.Type == chat.TypeThread && shownThread(e) != id {
			t.Fatalf("the view shows another thread while b is dead: %s", e.Raw)
		}
		fromCopy = fromCopy || e.Type == chat.TypeReplayDone && chatsock.FieldOf(e, "from_copy") == true
	}
	if !fromCopy {
		t.Fatalf("the view of b's thread while b is dead is not the hub's copy:\n%s", chatsock.Summary(v.Snapshot()))
	}
	from := v.Len()
	v.Send(chatsock.Msg("w1", "remember w1"))
	j := v.WaitFor(from, wait, func(e client.Event) bool {
		return chatsock.Delivery("w1", chat.DeliveryQueued)(e) && chatsock.FieldOf(e, "detail") == "waits for machine b"
	}, "w1 waits for b")
	node.start()
	k := j
	done := v.WaitFor(k, 2*wait, chatsock.PromptDone("w1", chat.StopEndTurn), "w1's turn, on the view")
	v.WaitFor(k, wait, chatsock.Delivery("w1", chat.DeliverySubmitted), "w1 submitted, on the view")
	evs := v.Snapshot()[k : done+1]
	next := last + 1
	for _, e := range v.Snapshot()[:done+1] { // the copy's replay, then b's own log
		if e.Seq == 0 {
			continue
		}
		if e.Seq != next {
			t.Fatalf("after the thread the view shows seq %d, want %d (b's log after %d, each once):\n%s", e.Seq, next, last, chatsock.Summary(evs))
		}
		next++
	}
	if got := chatsock.Chunks(evs); got != "Noted." {
		t.Fatalf("the view shows w1's answer as %q, want Claude Code's %q", got, "Noted.")
	}
}
