package daemon_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/scriptd"
)

// clusterWait bounds each wait of the hub-and-node tests.
const clusterWait = 30 * time.Second

// joinedAs is the config change that makes a daemon node name of the hub
// at addr (whose data directory is hubData): its key made and registered
// with a token of its own, as `parley join` does.
func joinedAs(t *testing.T, name, hubData, addr string) func(*config.Config) {
	return func(cfg *config.Config) {
		cfg.Cluster.Node, cfg.Cluster.Hub = name, addr
		tok, err := cluster.IssueToken(hubData, addr, name, time.Now().Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
			t.Fatal(err)
		}
		if _, err := cluster.Join(t.Context(), cfg.DataDir, tok, name, "test"); err != nil {
			t.Fatal(err)
		}
	}
}

// startHubAndNode starts a hub and node b joined to it: two daemons over the
// scripted agent, linked by the real embedded NATS server, each stopped and
// started again on its own address and data (b's link finds the hub's
// listener again). It waits for b online at the hub.
func startHubAndNode(t *testing.T) (hub, b *scriptd.Rig) {
	t.Helper()
	hub = scriptd.Start(t, func(cfg *config.Config) {
		cfg.Cluster.Node, cfg.Cluster.Listen = "hub", "127.0.0.1:0"
	})
	addr := hub.D().ClusterHub().Addr()
	b = scriptd.Start(t, joinedAs(t, "b", hub.Config().DataDir, addr))
	waitBOnline(t, hub, true)
	return hub, b
}

func waitBOnline(t *testing.T, hub *scriptd.Rig, want bool) {
	t.Helper()
	testkit.Eventually(t, clusterWait, func() bool {
		nodes, err := hub.D().ClusterHub().Nodes(context.Background())
		return err == nil && len(nodes) == 1 && nodes[0].Online == want
	}, fmt.Sprintf("b online=%v at the hub", want))
}

// dialRoute opens a socket on the hub's route chatID, from since in thread
// (since < 0: none), and waits for its connect sequence.
func dialRoute(t *testing.T, r *scriptd.Rig, chatID string, since int64, thread chat.ThreadID) *chatsock.Conn {
	t.Helper()
	s := chatsock.Dial(t, r.URL(), r.D().Token(), client.Options{Chat: chatID, Since: since, Thread: thread})
	s.WaitFor(0, clusterWait, chatsock.Type(chat.TypeReplayDone), "replay_done")
	return s
}

// threadShown is the id of the thread a "thread" frame shows.
func threadShown(e client.Event) chat.ThreadID {
	var te chat.ThreadEvent
	if e.Type != chat.TypeThread || e.Decode(&te) != nil {
		return ""
	}
	return te.Thread.ID
}

// startThreadOnB starts a thread on b from the hub's route chatID with one
// turn, and returns its id at the hub and the last seq the socket saw.
func startThreadOnB(t *testing.T, hub, b *scriptd.Rig, chatID string) (chat.ThreadID, int64) {
	t.Helper()
	s := dialRoute(t, hub, chatID, -1, "")
	s.Send(map[string]any{"type": "message", "message_id": "m1", "text": "say hi",
		"intent": map[string]any{"new": map[string]any{"cwd": b.Work, "node": "b"}}})
	end := s.WaitFor(0, clusterWait, chatsock.PromptDone("m1", chat.StopEndTurn), "the first turn, on b")
	id := threadShown(s.Get(s.WaitFor(0, clusterWait, func(e client.Event) bool { return threadShown(e) != "" }, "the route's thread")))
	last := s.Get(end).Seq
	if err := s.Client().Close(); err != nil {
		t.Fatal(err)
	}
	return id, last
}

// followsWhenBack opens a view of the route chatID at the hub from last in
// thread id while b is away. With fromCopy it shows the thread at once, read
// from the hub's copy of b's recent events (replay_done says so); without
// (the hub holds no summary of the thread), it connects showing no thread.
// Either way a message sent from it waits for b. Then b comes back: with no
// reconnect, the view shows b's log after last (each seq once, in order,
// none missing), the message's receipts and its answer.
func followsWhenBack(t *testing.T, hub, b *scriptd.Rig, chatID string, id chat.ThreadID, last int64, fromCopy bool) {
	t.Helper()
	v := dialRoute(t, hub, chatID, last, id)
	shown := false
	for _, e := range v.Snapshot() {
		if e.Type == chat.TypeThread {
			shown = true
			if !fromCopy {
				t.Fatalf("the view shows a thread the hub holds nothing of while b is away: %s", e.Raw)
			}
		}
		if e.Type == chat.TypeReplayDone && fromCopy && chatsock.FieldOf(e, "from_copy") != true {
			t.Fatalf("the view's replay while b is away is not marked as the hub's copy: %s", e.Raw)
		}
	}
	if fromCopy && !shown {
		t.Fatalf("the view shows no thread while b is away, though the hub keeps a copy:\n%s", chatsock.Summary(v.Snapshot()))
	}
	from := v.Len()
	v.Send(chatsock.Msg("w1", "say back"))
	j := v.WaitFor(from, clusterWait, func(e client.Event) bool {
		return chatsock.Delivery("w1", chat.DeliveryQueued)(e) && chatsock.FieldOf(e, "detail") == "waits for machine b"
	}, "w1 waits for b")
	b.Up()
	k := j
	if !fromCopy {
		k = v.WaitFor(j, clusterWait, func(e client.Event) bool { return threadShown(e) == id }, "the route's thread, once b is back")
	}
	end := v.WaitFor(k, clusterWait, chatsock.PromptDone("w1", chat.StopEndTurn), "w1's turn, on the view")
	evs := v.Snapshot()[k : end+1]
	next := last + 1
	for _, e := range v.Snapshot()[:end+1] { // the copy's replay, then b's own log
		if e.Seq == 0 {
			continue
		}
		if e.Seq != next {
			t.Fatalf("after the thread the view shows seq %d, want %d (b's log after %d, each once):\n%s", e.Seq, next, last, chatsock.Summary(evs))
		}
		next++
	}
	if v.WaitFor(k, clusterWait, chatsock.Delivery("w1", chat.DeliverySubmitted), "w1 submitted, on the view") > end {
		t.Fatalf("w1's receipt came after its turn's end:\n%s", chatsock.Summary(evs))
	}
	if got := chatsock.Chunks(evs); got != "back" {
		t.Fatalf("the view shows w1's answer as %q, want %q", got, "back")
	}
	if err := v.Err(); err != nil {
		t.Fatalf("the view's socket ended: %v", err)
	}
}

// A phone that opened the hub's chat on a thread of b while b was away (the
// laptop asleep) follows that thread once b is back, with no reconnect: the
// thread, its log from the phone's since, its message's receipts and answer.
func TestAViewOpenedWhileItsMachineIsAwayFollowsItsThreadWhenItIsBack(t *testing.T) {
	t.Parallel()
	hub, b := startHubAndNode(t)
	id, last := startThreadOnB(t, hub, b, "phone")
	b.Down()
	waitBOnline(t, hub, false)
	followsWhenBack(t, hub, b, "phone", id, last, true)
}

// The same for a thread the hub holds nothing of while b is away (no
// summary: b's was lost with the hub's directory, say): the view connects
// showing no thread, and shows it, with no reconnect, once b is back and
// tells the hub of it again.
func TestAViewOfAThreadTheHubHoldsNothingOfFollowsItWhenItsMachineIsBack(t *testing.T) {
	t.Parallel()
	hub, b := startHubAndNode(t)
	id, last := startThreadOnB(t, hub, b, "phone")
	b.Down()
	waitBOnline(t, hub, false)
	node, local, _ := cluster.SplitRemoteID(id)
	kv, err := hub.D().ClusterHub().JetStream().KeyValue(t.Context(), "parley_threads")
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Purge(t.Context(), cluster.ThreadKey(node, local)); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, clusterWait, func() bool {
		_, err := hub.D().ClusterHub().Source().Thread(context.Background(), id)
		return err != nil
	}, "the hub forgetting b's thread")
	followsWhenBack(t, hub, b, "phone", id, last, false)
}

// A hub restarted keeps which thread of b each of its routes shows, and a
// view of such a route opened right after the restart, before b is back,
// follows that thread once b is.
func TestAViewOpenedRightAfterAHubRestartFollowsItsNodesThread(t *testing.T) {
	t.Parallel()
	hub, b := startHubAndNode(t)
	id, last := startThreadOnB(t, hub, b, "phone")
	b.Down()
	waitBOnline(t, hub, false)
	hub.Restart()
	followsWhenBack(t, hub, b, "phone", id, last, true)
}

// A message to b's thread sent again under its id (a client that reconnected
// sends again what it had no receipt for) is answered at once with the
// receipt its first copy reached on b, never an older one, whether its first
// copy started the thread or waited in b's inputs at the hub, and while b
// is away too; and it does not hold the route: a new message after three
// resends gets its receipts and its turn. b's log has each message once.
func TestAResendToANodesThreadGetsTheReceiptItsFirstCopyReached(t *testing.T) {
	t.Parallel()
	hub, b := startHubAndNode(t)
	id, _ := startThreadOnB(t, hub, b, "phone")
	s := dialRoute(t, hub, "phone", -1, "")
	resend := func(msgID, text, what string) {
		t.Helper()
		for i := range 3 {
			from := s.Len()
			s.Send(chatsock.Msg(msgID, text))
			j := s.WaitFor(from, clusterWait, func(e client.Event) bool { return e.Seq == 0 && e.Type == chat.TypeDelivery }, "the resend's receipt")
			if st := chatsock.FieldOf(s.Get(j), "state"); st != chat.DeliverySubmitted || chatsock.FieldOf(s.Get(j), "message_id") != msgID {
				t.Fatalf("resend %d of %s, submitted on b, %s, is answered %s", i+1, msgID, what, s.Get(j).Raw)
			}
		}
	}
	resend("m1", "say hi", "the thread's first message")
	from := s.Len()
	s.Send(chatsock.Msg("m2", "say next"))
	s.WaitFor(from, clusterWait, chatsock.Delivery("m2", chat.DeliverySubmitted), "m2 submitted")
	s.WaitFor(from, clusterWait, chatsock.PromptDone("m2", chat.StopEndTurn), "m2's turn")
	resend("m2", "say next", "a message handed over by the hub's queue")
	_, local, _ := cluster.SplitRemoteID(id)
	var log struct {
		Events []struct {
			Type string `json:"type"`
			ID   string `json:"message_id"`
		} `json:"events"`
	}
	getFrom(t, b, "/api/threads/"+string(local)+"/events?since=0", &log)
	seen := map[string]int{}
	for _, e := range log.Events {
		if e.Type == chat.TypeUserMessage {
			seen[e.ID]++
		}
	}
	if seen["m1"] != 1 || seen["m2"] != 1 {
		t.Fatalf("b's log has m1 %d times and m2 %d times, want each once", seen["m1"], seen["m2"])
	}
	b.Down()
	waitBOnline(t, hub, false)
	resend("m2", "say next", "while b is away")
	from = s.Len()
	s.Send(chatsock.Msg("m3", "say later"))
	s.WaitFor(from, clusterWait, func(e client.Event) bool {
		return chatsock.Delivery("m3", chat.DeliveryQueued)(e) && chatsock.FieldOf(e, "detail") == "waits for machine b"
	}, "m3 waits for b")
}

// getFrom reads a REST answer of the daemon r runs.
func getFrom(t *testing.T, r *scriptd.Rig, path string, v any) {
	t.Helper()
	api := client.API{Server: r.URL(), Token: r.D().Token()}
	if err := api.Call(t.Context(), "GET", path, nil, v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}
