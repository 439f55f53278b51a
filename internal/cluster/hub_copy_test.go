package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/fanout"
	"github.com/parleyhq/parley/internal/follow"
	"github.com/parleyhq/parley/internal/store"
)

// followAt shows remote thread id at the hub from since (-1: its tail of
// tail events), as a socket's follower does, until its replay is done.
func followAt(t *testing.T, h *Hub, local *fanout.Fanout, id chat.ThreadID, since int64, tail int) (*follow.Follower, *shown) {
	t.Helper()
	route := chat.RouteKey{Channel: "web", Chat: "phone-" + time.Now().Format("150405.000000000")}
	f, start, err := follow.Subscribe(t.Context(), follow.Deps{Source: h.Source(), Router: hubRoute{local, id}, Hub: local}, route,
		follow.Options{Buffer: 256, Tail: tail})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	var s shown
	if err := f.Start(t.Context(), start, since, id, s.emit); err != nil {
		t.Fatal(err)
	}
	return f, &s
}

// until takes f's live items until it has shown n events.
func (s *shown) until(t *testing.T, f *follow.Follower, n int) {
	t.Helper()
	for len(s.events()) < n {
		select {
		case <-f.Sub().Ready():
		case <-time.After(10 * time.Second):
			t.Fatalf("the hub showed %d events, want %d", len(s.events()), n)
		}
		if _, err := f.Live(t.Context(), s.emit); err != nil {
			t.Fatal(err)
		}
	}
}

// of returns the payloads of the items of kind k.
func (s *shown) of(k follow.Kind) []chat.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []chat.Event
	for _, it := range s.items {
		if it.Kind == k {
			out = append(out, it.Event)
		}
	}
	return out
}

func (s *shown) done(t *testing.T) chat.ReplayDone {
	t.Helper()
	ds := s.of(follow.KindCaughtUp)
	if len(ds) != 1 {
		t.Fatalf("%d replay_done, want 1", len(ds))
	}
	var d chat.ReplayDone
	if err := ds[0].Decode(&d); err != nil {
		t.Fatal(err)
	}
	return d
}

// A node's thread at the hub while the node is away: the hub's copy of the
// events it relayed (one the link lost read back from the node) is
// replayed, equal to the node's log, and the replay says it is the hub's
// copy and since when the machine is offline; its tail too. When the node
// is back, the same follower goes on from the node's log: the events the
// node made while away, then new ones, no gap, none twice; a new replay is
// the node's own, not the copy. A thread deleted on the node leaves the
// copy, and a revoked node's copy is gone.
func TestAnAwayNodesThreadIsReadFromTheHubsCopy(t *testing.T) {
	t.Parallel()
	hubData := t.TempDir()
	h := startHub(t, hubData, "127.0.0.1:0")
	dataB := join(t, h, "b")
	b := newMachine(t)
	local := fanout.New(nil)
	stop, err := h.Relay(local.Publish)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	link := func() *Link {
		l, err := Dial(LinkOptions{DataDir: dataB, Hub: h.Addr(), Node: "b", Heartbeat: testHeartbeat, Store: b.st, Events: b.hub})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "b online", func() bool { n, _ := status(t, h, "b"); return n.Online })
		return l
	}
	l := link()
	const th = chat.ThreadID("t_one")
	remote := RemoteID("b", th)
	b.write(th, 1, false)
	watch, s := followAt(t, h, local, remote, 0, 0) // a viewer at the hub while b is there
	b.write(th, 2, false)
	b.write(th, 1, true) // lost on the way: the relay reads it back from b
	b.write(th, 2, false)
	s.until(t, watch, 6)
	if got, want := s.events(), b.frames(th, "b", 0); !equal(got, want) {
		t.Fatalf("the hub showed:\n%q\nwant b's log:\n%q", got, want)
	}
	waitFor(t, 10*time.Second, "b's thread listed at the hub", func() bool {
		rt, ok := remoteThread(t, h, remote)
		return ok && rt.Thread.LastSeq == 6
	})

	l.Close() // b goes away (its goodbye: offline at once)
	waitFor(t, 10*time.Second, "b offline", func() bool { n, _ := status(t, h, "b"); return !n.Online })
	seen := h.lastHeard(t.Context(), "b")
	awayF, away := followAt(t, h, local, remote, 0, 0)
	if got, want := away.events(), b.frames(th, "b", 0); !equal(got, want) {
		t.Fatalf("a replay at the hub while b is away:\n%q\nwant b's log from the hub's copy:\n%q", got, want)
	}
	if d := away.done(t); !d.FromCopy || !d.OfflineSince.Equal(seen) || d.LastSeq != 6 {
		t.Fatalf("replay_done %+v, want from the hub's copy, b offline since %v, last seq 6", d, seen)
	}
	if p := away.of(follow.KindPruned); len(p) != 0 {
		t.Fatalf("the copy holds all of b's log, yet the replay says %d were pruned", len(p))
	}
	_, tail := followAt(t, h, local, remote, -1, 2)
	if got, want := tail.events(), b.frames(th, "b", 4); !equal(got, want) || !tail.done(t).FromCopy {
		t.Fatalf("the tail of 2 at the hub while b is away:\n%q (%+v)\nwant b's last two, from the copy:\n%q", got, tail.done(t), want)
	}

	// Back: b made two events while away; then one more, live.
	b.write(th, 2, true)
	l = link()
	defer l.Close()
	b.write(th, 1, false)
	away.until(t, awayF, 9)
	s.until(t, watch, 9)
	for _, sh := range []*shown{away, s} {
		if got, want := sh.events(), b.frames(th, "b", 0); !equal(got, want) {
			t.Fatalf("a viewer of the copy once b is back:\n%q\nwant b's log, no gap, nothing twice:\n%q", got, want)
		}
	}
	_, fresh := followAt(t, h, local, remote, 0, 0)
	if got, want := fresh.events(), b.frames(th, "b", 0); !equal(got, want) || fresh.done(t).FromCopy {
		t.Fatalf("a replay once b is back:\n%q (%+v)\nwant b's own log, not the copy:\n%q", got, fresh.done(t), want)
	}
	last, err := h.copy.lastSeq(t.Context(), remote)
	if err != nil || last != 9 {
		t.Fatalf("the copy's last seq %d %v, want 9: the events b made while away are copied too", last, err)
	}

	// A thread deleted on its node leaves the copy.
	const other = chat.ThreadID("t_two")
	b.write(other, 1, false)
	waitFor(t, 10*time.Second, "b's other thread in the copy and listed", func() bool {
		last, err := h.copy.lastSeq(t.Context(), RemoteID("b", other))
		_, listed := remoteThread(t, h, RemoteID("b", other))
		return err == nil && last == 1 && listed
	})
	if err := b.st.DeleteThread(t.Context(), other); err != nil {
		t.Fatal(err)
	}
	b.hub.CloseThread(other, fanout.ReasonDeleted) // as the router does
	waitFor(t, 10*time.Second, "b's deleted thread gone from the hub's list", func() bool {
		_, ok := remoteThread(t, h, RemoteID("b", other))
		return !ok
	})
	if last, err := h.copy.lastSeq(t.Context(), RemoteID("b", other)); err != nil || last != 0 {
		t.Fatalf("the copy of a thread deleted on b: last seq %d %v, want none", last, err)
	}

	// A revoked node's copy is deleted.
	adm, err := DialAdmin(hubData)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if err := adm.Revoke(t.Context(), "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.js.Stream(t.Context(), CopyStream("b")); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("the revoked node's copy: %v, want it deleted", err)
	}
}

// writeText commits n events of text to thread id and publishes them.
func (m *machine) writeText(id chat.ThreadID, n int, text string) {
	m.t.Helper()
	th := m.ths[id]
	if th == nil {
		th = &chat.Thread{ID: id, Agent: "claude", Cwd: "/w", Title: "a long one", State: chat.ThreadIdle, CreatedAt: time.Now(), UpdatedAt: time.Now()}
		m.ths[id] = th
	}
	var b store.Batch
	for range n {
		th.LastSeq++
		ev, err := chat.NewEvent(id, chat.AgentChunk{Text: text}, time.Now())
		if err != nil {
			m.t.Fatal(err)
		}
		ev.Seq = th.LastSeq
		b.Events = append(b.Events, ev)
	}
	cp := *th
	b.Thread = &cp
	if err := m.st.Commit(context.Background(), b); err != nil {
		m.t.Fatal(err)
	}
	for _, ev := range b.Events {
		m.hub.Publish(ev)
	}
}

// The copy is bounded by copy_bytes: past it its oldest events go, and a
// replay while the node is away (here dead without a goodbye) says the ones
// before are not at the hub (history_pruned), then gives the rest equal to
// the node's log.
func TestAHubsCopyPastItsBytesDropsItsOldestAndSaysSo(t *testing.T) {
	t.Parallel()
	h, err := StartHub(t.Context(), HubOptions{DataDir: t.TempDir(), Listen: "127.0.0.1:0", CopyBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	dataB := join(t, h, "b")
	b := newMachine(t)
	local := fanout.New(nil)
	stop, err := h.Relay(local.Publish)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	l, err := Dial(LinkOptions{DataDir: dataB, Hub: h.Addr(), Node: "b", Heartbeat: testHeartbeat, Store: b.st, Events: b.hub})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	waitFor(t, 10*time.Second, "b online", func() bool { n, _ := status(t, h, "b"); return n.Online })
	const th = chat.ThreadID("t_long")
	remote := RemoteID("b", th)
	b.writeText(th, 1, "the first")
	watch, s := followAt(t, h, local, remote, 0, 0)
	for range 10 {
		b.writeText(th, 4, strings.Repeat("words ", 700)) // about 4 KiB each: 160 KiB in all
	}
	s.until(t, watch, 41)
	// b dies without a goodbye: its record may still look current, but a
	// read finds nobody there and is answered from the copy all the same.
	clients := h.srv.NumClients()
	l.Conn().Close()
	waitFor(t, 10*time.Second, "b's connection gone at the hub", func() bool { return h.srv.NumClients() == clients-1 })

	_, away := followAt(t, h, local, remote, 0, 0)
	p := away.of(follow.KindPruned)
	if len(p) != 1 {
		t.Fatalf("a replay of a copy past its bytes: %d history_pruned, want 1", len(p))
	}
	var pruned chat.HistoryPruned
	if err := p[0].Decode(&pruned); err != nil {
		t.Fatal(err)
	}
	if through := pruned.ThroughSeq; through < 10 || through >= 41 {
		t.Fatalf("history_pruned through %d: want the oldest of 41 events of 4 KiB gone from a copy of 64 KiB, some kept", through)
	}
	if got, want := away.events(), b.frames(th, "b", pruned.ThroughSeq); !equal(got, want) || !away.done(t).FromCopy {
		t.Fatalf("the replay after history_pruned through %d:\n%d events\nwant b's log after it from the copy: %d events",
			pruned.ThroughSeq, len(got), len(want))
	}
}

// A hub restarted while a node is away still shows the node's thread from
// its copy, and when the node comes back with events it made meanwhile (its
// link down), the viewer of the copy gets them before the node's next live
// one: the restarted relay fills the gap after the copy's newest.
func TestAViewerOfTheCopyMissesNothingWhenTheNodeIsBackAfterAHubRestart(t *testing.T) {
	hubData := t.TempDir()
	h := startHub(t, hubData, "127.0.0.1:0")
	addr := h.Addr()
	dataB := join(t, h, "b")
	b := newMachine(t)
	relay := func(h *Hub) *fanout.Fanout {
		local := fanout.New(nil)
		stop, err := h.Relay(local.Publish)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		return local
	}
	local := relay(h)
	link := func() *Link {
		l, err := Dial(LinkOptions{DataDir: dataB, Hub: addr, Node: "b", Heartbeat: testHeartbeat, Store: b.st, Events: b.hub})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.Close)
		return l
	}
	l := link()
	const th = chat.ThreadID("t_one")
	remote := RemoteID("b", th)
	b.write(th, 1, false)
	watch, s := followAt(t, h, local, remote, 0, 0)
	b.write(th, 3, false)
	s.until(t, watch, 4)
	waitFor(t, 10*time.Second, "b's summary at the hub", func() bool { rt, _ := remoteThread(t, h, remote); return rt.Thread.LastSeq == 4 })
	l.Close()
	waitFor(t, 10*time.Second, "b offline", func() bool { n, _ := status(t, h, "b"); return !n.Online })

	h.Close()
	h2 := startHub(t, hubData, addr)
	local2 := relay(h2)
	awayF, away := followAt(t, h2, local2, remote, 0, 0)
	if got, want := away.events(), b.frames(th, "b", 0); !equal(got, want) || !away.done(t).FromCopy {
		t.Fatalf("a replay at the restarted hub while b is away:\n%q (%+v)\nwant b's log from the copy:\n%q", got, away.done(t), want)
	}
	b.write(th, 2, true) // made on b while its link is down
	link()
	b.write(th, 1, false)
	away.until(t, awayF, 7)
	if got, want := away.events(), b.frames(th, "b", 0); !equal(got, want) {
		t.Fatalf("the viewer of the copy once b is back:\n%q\nwant b's log, no gap, nothing twice:\n%q", got, want)
	}
}
