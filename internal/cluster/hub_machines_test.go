package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/fanout"
)

// The hub lists every machine's agents with its node (its own under its own
// name; a node's from its record, offline when it is; a node never heard from
// none) and its machines with their thread counts.
func TestTheHubListsEveryMachinesAgentsAndThreads(t *testing.T) {
	t.Parallel()
	h := startHub(t, t.TempDir(), "127.0.0.1:0")
	dataB := join(t, h, "b")
	join(t, h, "c") // joined, never connected
	b := newMachine(t)
	b.write(chat.ThreadID("t_one"), 1, false)
	l, err := Dial(LinkOptions{DataDir: dataB, Hub: h.Addr(), Node: "b", Heartbeat: testHeartbeat,
		Store: b.st, Events: b.hub, AgentInfo: []chat.AgentInfo{{ID: "claude", Name: "Claude Code", Transport: "stream", Status: "ready", Roots: []string{"/w"}}}})
	if err != nil {
		t.Fatal(err)
	}
	own := []chat.AgentInfo{{ID: "claude", Name: "Claude Code", Transport: "stream", Status: "ready"}}
	threads := func() map[string]int {
		ms, err := h.Machines(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		for _, m := range ms {
			out[m.Name] = m.Threads
		}
		return out
	}
	waitFor(t, 10*time.Second, "b online with its thread", func() bool {
		n, _ := status(t, h, "b")
		return n.Online && threads()["b"] == 1
	})
	if c := threads(); len(c) != 2 || c["c"] != 0 {
		t.Fatalf("thread counts %v, want b 1 and c 0", c)
	}
	agents, err := h.Agents(t.Context(), "hub", own)
	if err != nil {
		t.Fatal(err)
	}
	if len(agents) != 2 || agents[0].Node != "hub" || agents[0].Status != "ready" ||
		agents[1].Node != "b" || agents[1].ID != "claude" || agents[1].Status != "ready" || len(agents[1].Roots) != 1 {
		t.Fatalf("agents %+v, want the hub's claude then b's, both ready", agents)
	}
	if own[0].Node != "" {
		t.Fatal("Agents wrote into the caller's list")
	}

	l.Close() // a clean stop: offline at once
	waitFor(t, 10*time.Second, "b offline", func() bool {
		n, _ := status(t, h, "b")
		return !n.Online
	})
	agents, err = h.Agents(t.Context(), "hub", own)
	if err != nil || len(agents) != 2 || agents[1].Status != AgentOffline || agents[0].Status != "ready" {
		t.Fatalf("agents with b offline: %+v %v, want b's listed offline", agents, err)
	}
	if c := threads(); c["b"] != 1 {
		t.Fatalf("b offline, thread counts %v: its thread stays counted", c)
	}
}

// A revoked machine's threads leave the hub's list at once, and a machine
// joining again under its name starts with none of them.
func TestARevokedNodesThreadsLeaveTheDirectory(t *testing.T) {
	t.Parallel()
	h := startHub(t, t.TempDir(), "127.0.0.1:0")
	dataB := join(t, h, "b")
	b := newMachine(t)
	b.write(chat.ThreadID("t_one"), 1, false)
	b.write(chat.ThreadID("t_two"), 1, false)
	l, err := Dial(LinkOptions{DataDir: dataB, Hub: h.Addr(), Node: "b", Heartbeat: testHeartbeat,
		Store: b.st, Events: b.hub})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	listed := func() int {
		ths, err := h.Threads(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return len(ths)
	}
	waitFor(t, 10*time.Second, "b's two threads listed", func() bool { return listed() == 2 })
	if err := h.Revoke(t.Context(), "b"); err != nil {
		t.Fatal(err)
	}
	if n := listed(); n != 0 {
		t.Fatalf("b revoked, the hub still lists %d of its threads", n)
	}
	join(t, h, "b")
	ms, err := h.Machines(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || ms[0].Name != "b" || ms[0].Threads != 0 {
		t.Fatalf("b joined again: machines %+v, want b with no thread", ms)
	}
}

// The hub answers its machines, their agents and threads from its copy of the
// directory: with JetStream gone (a hiccup), a dashboard connecting still
// gets every machine's agents at once, not after a NATS read per node.
func TestTheHubListsItsMachinesFromMemory(t *testing.T) {
	t.Parallel()
	h := startHub(t, t.TempDir(), "127.0.0.1:0")
	dataB := join(t, h, "b")
	b := newMachine(t)
	b.write(chat.ThreadID("t_one"), 1, false)
	l, err := Dial(LinkOptions{DataDir: dataB, Hub: h.Addr(), Node: "b", Heartbeat: 10 * time.Second,
		Store: b.st, Events: b.hub, AgentInfo: []chat.AgentInfo{{ID: "claude", Status: "ready"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	waitFor(t, 10*time.Second, "b online with its thread", func() bool {
		ths, _ := h.Threads(t.Context())
		n, _ := status(t, h, "b")
		return n.Online && len(ths) == 1
	})
	if err := h.srv.DisableJetStream(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	agents, err := h.Agents(ctx, "hub", nil)
	if err != nil || len(agents) != 1 || agents[0].Node != "b" || agents[0].Status != "ready" {
		t.Fatalf("JetStream down: agents %+v, %v; want b's claude, ready", agents, err)
	}
	ms, err := h.Machines(ctx)
	if err != nil || len(ms) != 1 || ms[0].Threads != 1 {
		t.Fatalf("JetStream down: machines %+v, %v; want b with its thread", ms, err)
	}
	ths, err := h.Threads(ctx)
	if err != nil || len(ths) != 1 || ths[0].Thread.ID != RemoteID("b", "t_one") {
		t.Fatalf("JetStream down: threads %+v, %v; want b's t_one", ths, err)
	}
}

// The hub says when a machine comes online and when it goes offline, a
// crashed one's included (its heartbeats stop: no record says so), so open
// dashboards need not poll for it.
func TestTheHubSaysWhenAMachineComesAndGoes(t *testing.T) {
	t.Parallel()
	h := startHub(t, t.TempDir(), "127.0.0.1:0")
	data := join(t, h, "b")
	nc, err := connectAs(t, data, h.Addr(), "b", nil)
	if err != nil {
		t.Fatal(err)
	}
	changed := h.MachinesChanged()
	rec, _ := json.Marshal(Record{Node: "b", Agents: []string{"claude"}, Every: time.Second, Since: time.Now()})
	if ans, err := nc.Request(dirSubject("b"), rec, 10*time.Second); err != nil || len(ans.Data) > 0 {
		t.Fatalf("b's record: %v %s", err, ans.Data)
	}
	heard := func(what string) {
		t.Helper()
		select {
		case <-changed:
		case <-time.After(10 * time.Second):
			t.Fatalf("the hub did not say %s", what)
		}
		changed = h.MachinesChanged()
	}
	heard("b came online")
	if n, _ := status(t, h, "b"); !n.Online {
		t.Fatal("the hub said b changed, b is not online")
	}
	// b's heartbeats stop (a crash): three missed, it is offline, and said so.
	heard("b went offline")
	if n, _ := status(t, h, "b"); n.Online {
		t.Fatal("the hub said b went offline, b is online")
	}
	select {
	case <-changed:
		t.Fatal("the hub said b changed again, nothing did")
	case <-time.After(500 * time.Millisecond):
	}
}

// A thread deleted on its node leaves the hub's list, and the hub is told
// (its routes and views end): at once while linked, and at the next link-up
// for one deleted while the link was down. Another node cannot say b's
// thread is gone: NATS refuses it.
func TestAThreadDeletedOnItsNodeLeavesTheHub(t *testing.T) {
	t.Parallel()
	gone := make(chan chat.ThreadID, 8)
	h, err := StartHub(t.Context(), HubOptions{DataDir: t.TempDir(), Listen: "127.0.0.1:0",
		ThreadGone: func(id chat.ThreadID) { gone <- id }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	dataB, dataC := join(t, h, "b"), join(t, h, "c")
	b := newMachine(t)
	for _, id := range []chat.ThreadID{"t_one", "t_two", "t_three"} {
		b.write(id, 1, false)
	}
	dialB := func() *Link {
		l, err := Dial(LinkOptions{DataDir: dataB, Hub: h.Addr(), Node: "b", Heartbeat: testHeartbeat, Store: b.st, Events: b.hub})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	l := dialB()
	listed := func() []chat.ThreadID {
		ths, err := h.Threads(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var ids []chat.ThreadID
		for _, th := range ths {
			ids = append(ids, th.Thread.ID)
		}
		return ids
	}
	waitFor(t, 10*time.Second, "b's three threads listed", func() bool { return len(listed()) == 3 })

	// c, with its own real key, says b's thread is gone: refused by NATS.
	errs := make(chan error, 8)
	c, err := connectAs(t, dataC, h.Addr(), "c", errs)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Publish(goneSubject("b", "t_one"), nil); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		if !errors.Is(err, nats.ErrPermissionViolation) {
			t.Fatalf("c saying b's thread is gone: %v, want a permission violation", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("NATS did not refuse c's word on b's thread")
	}

	// Deleted on b while linked: gone from the hub's list, the hub told.
	deleteOn := func(id chat.ThreadID) {
		t.Helper()
		if err := b.st.DeleteThread(t.Context(), id); err != nil {
			t.Fatal(err)
		}
		b.hub.CloseThread(id, fanout.ReasonDeleted) // as the router does
	}
	deleteOn("t_one")
	select {
	case id := <-gone:
		if id != RemoteID("b", "t_one") {
			t.Fatalf("the hub was told %s is gone, want %s", id, RemoteID("b", "t_one"))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the hub was not told b's deleted thread is gone")
	}
	if ids := listed(); len(ids) != 2 || slices.Contains(ids, RemoteID("b", "t_one")) {
		t.Fatalf("b deleted t_one, the hub lists %v", ids)
	}

	// Deleted while the link is down: gone at the next link-up.
	l.Close()
	deleteOn("t_two")
	l = dialB()
	defer l.Close()
	select {
	case id := <-gone:
		if id != RemoteID("b", "t_two") {
			t.Fatalf("the hub was told %s is gone, want %s", id, RemoteID("b", "t_two"))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the hub was not told of the thread b deleted while away")
	}
	if ids := listed(); len(ids) != 1 || ids[0] != RemoteID("b", "t_three") {
		t.Fatalf("after b's link-up the hub lists %v, want only t_three", ids)
	}
}

// A node's summaries and its word that a thread is gone are written at the
// hub in the order the node sent them: a summary still on its way behind a
// busy hub (the node stopped waiting for its answer) is never written after
// the thread's deletion, which would bring the deleted thread back. The node
// sends, as its link does when a request times out, without waiting: many
// summaries that keep the hub busy, then a thread's, then its deletion.
func TestASummaryBehindABusyHubDoesNotBringADeletedThreadBack(t *testing.T) {
	t.Parallel()
	h := startHub(t, t.TempDir(), "127.0.0.1:0")
	data := join(t, h, "b")
	b, err := connectAs(t, data, h.Addr(), "b", nil)
	if err != nil {
		t.Fatal(err)
	}
	inbox := inboxPrefix("b") + ".t"
	answers, err := b.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	send := func(subject, value string) {
		t.Helper()
		var data []byte
		if value != "" {
			data = []byte(value)
		}
		if err := b.PublishRequest(subject, inbox, data); err != nil {
			t.Fatal(err)
		}
	}
	const busy = 300
	for i := range busy {
		id := fmt.Sprintf("t_busy%d", i)
		send(sumSubject("b", id), `{"id":"`+id+`","title":"busy"}`)
	}
	send(sumSubject("b", "t_gone"), `{"id":"t_gone","title":"deleted next"}`)
	send(goneSubject("b", "t_gone"), "")
	for i := range busy + 2 {
		m, err := answers.NextMsg(30 * time.Second)
		if err != nil || len(m.Data) != 0 {
			t.Fatalf("answer %d: %v %v, want each written", i, m, err)
		}
	}
	if _, ok := remoteThread(t, h, RemoteID("b", "t_gone")); ok {
		t.Fatal("the deleted thread is listed at the hub again: its summary was written after its deletion")
	}
	if _, ok := remoteThread(t, h, RemoteID("b", chat.ThreadID(fmt.Sprintf("t_busy%d", busy-1)))); !ok {
		t.Fatal("the summaries before it are not listed")
	}
}
