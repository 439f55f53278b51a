//go:build e2e

package cluster_test

import (
	"fmt"
	"syscall"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
)

// The hub, a real `parley serve` process with its own data directory, is
// killed with kill -9 while messages from its socket to node b are in
// flight. After its restart the person's client sends again what had no
// receipt (as a client does); b's log then holds each message once, each
// turn ended, and no gap: nothing lost, nothing twice.
func TestAKilledHubLosesAndDoublesNoMessage(t *testing.T) {
	a := newAgentSetup(t)
	hub, nodes := startProcs(t, a, "b")
	b := nodes["b"]
	dial := func() *chatsock.Conn { return hub.dial("phone", 0, "") }
	s := dial()
	s.Send(newThreadMsg("m1", "hello", a.work))
	s.WaitFor(0, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "the first turn")
	remoteID := shownThread(s.Get(s.WaitFor(0, wait, func(e client.Event) bool { return shownThread(e) != "" }, "the route's thread")))
	_, local, _ := cluster.SplitRemoteID(remoteID)

	from := s.Len()
	ids := []string{"w1", "w2", "w3"}
	for _, id := range ids {
		s.Send(chatsock.Msg(id, "remember "+id))
	}
	s.WaitFor(from, wait, chatsock.Delivery("w1", chat.DeliveryQueued), "w1 taken")
	if err := hub.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	hub.cmd.Wait()
	receipted := map[string]bool{}
	for _, e := range s.Snapshot()[from:] {
		if e.Type == chat.TypeDelivery {
			receipted[fmt.Sprint(chatsock.FieldOf(e, "message_id"))] = true
		}
	}
	s.Client().Close()

	hub.start()
	hub.waitOnline(1)
	s = dial()
	for _, id := range ids {
		if !receipted[id] {
			s.Send(chatsock.Msg(id, "remember "+id))
		}
	}
	var log struct {
		Events []logEvent `json:"events"`
	}
	testkit.Eventually(t, 2*wait, func() bool {
		b.get("/api/threads/"+string(local)+"/events?since=0", &log)
		done := 0
		for _, e := range log.Events {
			if e.Type == chat.TypePromptDone && (e.MessageID == "w1" || e.MessageID == "w2" || e.MessageID == "w3") {
				done++
			}
		}
		return done >= len(ids)
	}, "each message's turn done on b")
	_, seen := gaplessLog(t, b.get, local)
	for _, id := range ids {
		if seen["remember "+id] != 1 {
			t.Fatalf("%s in b's log %d times, want once (%v; receipts before the kill: %v)", id, seen["remember "+id], seen, receipted)
		}
	}
}
