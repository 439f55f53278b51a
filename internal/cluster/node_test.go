package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/fanout"
	"github.com/parleyhq/parley/internal/follow"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/sqlite"
)

// machine is one parley's store and local hub, written the way a lane writes
// them: commit, then publish.
type machine struct {
	t   testing.TB
	st  *sqlite.Store
	hub *fanout.Fanout
	ths map[chat.ThreadID]*chat.Thread
}

func newMachine(t testing.TB) *machine {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "parley.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &machine{t: t, st: st, hub: fanout.New(nil), ths: map[chat.ThreadID]*chat.Thread{}}
}

// write commits n agent chunks to thread id (made when new) and publishes
// them unless silent (an event the link never saw: lost while it was down).
func (m *machine) write(id chat.ThreadID, n int, silent bool, cards ...chat.Card) {
	m.t.Helper()
	th := m.ths[id]
	if th == nil {
		th = &chat.Thread{ID: id, Agent: "claude", Cwd: "/w", Title: "fix the build", State: chat.ThreadIdle, CreatedAt: time.Now(), UpdatedAt: time.Now()}
		m.ths[id] = th
	}
	var b store.Batch
	for range n {
		th.LastSeq++
		ev, err := chat.NewEvent(id, chat.AgentChunk{Text: fmt.Sprintf("%s#%d ", id, th.LastSeq)}, time.Now())
		if err != nil {
			m.t.Fatal(err)
		}
		ev.Seq = th.LastSeq
		b.Events = append(b.Events, ev)
	}
	cp := *th
	b.Thread, b.Cards = &cp, cards
	if err := m.st.Commit(context.Background(), b); err != nil {
		m.t.Fatal(err)
	}
	if !silent {
		for _, ev := range b.Events {
			m.hub.Publish(ev)
		}
	}
}

// frames is thread id's log after since as the hub must show it: the same
// events, named by their remote id.
func (m *machine) frames(id chat.ThreadID, node string, since int64) []string {
	m.t.Helper()
	evs, err := m.st.Events(context.Background(), id, since, 10_000)
	if err != nil {
		m.t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		ev.Thread = RemoteID(node, id)
		out = append(out, string(ev.Frame()))
	}
	return out
}

// hubRoute is the route table of the hub's test: one route showing a thread.
type hubRoute struct {
	h  *fanout.Fanout
	id chat.ThreadID
}

func (r hubRoute) Subscribe(_ context.Context, route chat.RouteKey, buffer int) (*fanout.Sub, *chat.Thread, error) {
	return r.h.Subscribe(route, r.id, buffer), &chat.Thread{ID: r.id}, nil
}

type shown struct {
	mu    sync.Mutex
	items []follow.Item
}

func (s *shown) emit(it follow.Item) error {
	s.mu.Lock()
	s.items = append(s.items, it)
	s.mu.Unlock()
	return nil
}

func (s *shown) events() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, it := range s.items {
		if it.Kind == follow.KindEvent {
			out = append(out, string(it.Frame))
		}
	}
	return out
}

func (s *shown) kinds() []follow.Kind {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []follow.Kind
	for _, it := range s.items {
		out = append(out, it.Kind)
	}
	return out
}

func remoteThread(t *testing.T, h *Hub, id chat.ThreadID) (RemoteThread, bool) {
	t.Helper()
	ths, err := h.Threads(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, th := range ths {
		if th.Thread.ID == id {
			return th, true
		}
	}
	return RemoteThread{}, false
}

// A node's thread followed at the hub through the one route follower, with
// the remote Source and the relay into the hub's local hub: the replay after
// since is the node's log, its open card is restated, its live events follow
// in order with no gap (one the link lost is read back from the node), and
// the hub lists it with its machine. Another node cannot speak for it, and
// its own node cannot make a frame name another thread.
func TestANodesThreadIsFollowedAtTheHubLikeALocalOne(t *testing.T) {
	t.Parallel()
	h := startHub(t, t.TempDir(), "127.0.0.1:0")
	if ths, err := h.Threads(t.Context()); err != nil || len(ths) != 0 {
		t.Fatalf("a new hub's node threads: %v %v, want none", ths, err)
	}
	dataB, dataC := join(t, h, "b"), join(t, h, "c")
	b := newMachine(t)
	const th = chat.ThreadID("t_one")
	card := chat.Card{ThreadID: th, RequestID: "r1", Kind: chat.CardPermission, State: chat.CardOpen,
		Request: json.RawMessage(`{"request_id":"r1","title":"run make"}`), CreatedAt: time.Now()}
	b.write(th, 3, false, card) // before the link: the summary comes at link-up

	l, err := Dial(LinkOptions{DataDir: dataB, Hub: h.Addr(), Node: "b", Heartbeat: testHeartbeat,
		Store: b.st, Events: b.hub, AgentInfo: []chat.AgentInfo{{ID: "claude", Name: "Claude Code"}}, Roots: []string{"/w"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	remote := RemoteID("b", th)
	waitFor(t, 10*time.Second, "b's thread listed at the hub", func() bool {
		rt, ok := remoteThread(t, h, remote)
		return ok && rt.Node == "b" && rt.Thread.LastSeq == 3 && rt.Thread.Title == "fix the build"
	})

	local := fanout.New(nil)
	stop, err := h.Relay(local.Publish)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	route := chat.RouteKey{Channel: "web", Chat: "phone"}
	f, start, err := follow.Subscribe(t.Context(), follow.Deps{Source: h.Source(), Router: hubRoute{local, remote}, Hub: local}, route, follow.Options{Buffer: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var s shown
	if err := f.Start(t.Context(), start, 1, remote, s.emit); err != nil {
		t.Fatal(err)
	}
	if got, want := s.events(), b.frames(th, "b", 1); !equal(got, want) {
		t.Fatalf("replay since 1 at the hub:\n%q\nwant the node's log:\n%q", got, want)
	}
	if k := s.kinds(); len(k) != 6 || k[0] != follow.KindThread || k[3] != follow.KindCard || k[5] != follow.KindCaughtUp {
		t.Fatalf("shown %v: want thread, 2 events, the restated card, turn, caught up", k)
	}

	// Live: two events, then one the link never carried, then one more.
	b.write(th, 2, false)
	b.write(th, 1, true)
	b.write(th, 1, false)
	// Node c speaks for b's thread id under its own name: another thread.
	nc, err := connectAs(t, dataC, h.Addr(), "c", nil)
	if err != nil {
		t.Fatal(err)
	}
	forged, _ := chat.NewEvent(th, chat.AgentChunk{Text: "forged"}, time.Now())
	forged.Seq = 8
	l2 := &Link{opt: LinkOptions{Node: "c"}, nc: nc, log: l.log}
	l2.publishEvent(fanout.Item{Event: forged})
	// b itself sends an event whose payload names the frame's thread: a
	// browser would read it as another thread's. Refused.
	lying := forged
	lying.Payload = json.RawMessage(`{"text":"lie","thread":"t_elsewhere"}`)
	l.publishEvent(fanout.Item{Event: lying})
	b.write(th, 1, false)
	for len(s.events()) < 7 {
		select {
		case <-f.Sub().Ready():
		case <-time.After(10 * time.Second):
			t.Fatalf("the hub showed %d events, want 7", len(s.events()))
		}
		if _, err := f.Live(t.Context(), s.emit); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := s.events(), b.frames(th, "b", 1); !equal(got, want) {
		t.Fatalf("the hub showed:\n%q\nwant the node's log after 1, no gap, nothing twice, nothing forged:\n%q", got, want)
	}
	waitFor(t, 10*time.Second, "the summary's last seq", func() bool {
		rt, _ := remoteThread(t, h, remote)
		return rt.Thread.LastSeq == 8
	})
	if n, _ := status(t, h, "b"); len(n.AgentInfo) != 1 || n.AgentInfo[0].Name != "Claude Code" || len(n.Roots) != 1 {
		t.Fatalf("b's directory record: %+v, want its agents and roots", n)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal([]byte(a[i]), []byte(b[i])) {
			return false
		}
	}
	return true
}

// gatedStore holds its thread reads until open is closed, saying on entered
// when one arrives.
type gatedStore struct {
	*sqlite.Store
	entered chan struct{}
	open    chan struct{}
}

func (g *gatedStore) Thread(ctx context.Context, id chat.ThreadID) (chat.Thread, error) {
	select {
	case g.entered <- struct{}{}:
	default:
	}
	<-g.open
	return g.Store.Thread(ctx, id)
}

// A node that closes while the hub's read of its store is on its way answers
// it before it goes (a dashboard at the hub refetches on the node's goodbye;
// a dropped read held it for the read's whole timeout), and a read sent after
// it went hears at once that the machine is offline.
func TestANodeClosingAnswersTheReadsOnTheirWay(t *testing.T) {
	t.Parallel()
	h := startHub(t, t.TempDir(), "127.0.0.1:0")
	dataB := join(t, h, "b")
	b := newMachine(t)
	const th = chat.ThreadID("t_one")
	b.write(th, 1, false)
	g := &gatedStore{Store: b.st, entered: make(chan struct{}, 1), open: make(chan struct{})}
	l, err := Dial(LinkOptions{DataDir: dataB, Hub: h.Addr(), Node: "b", Heartbeat: testHeartbeat, Store: g, Events: b.hub})
	if err != nil {
		t.Fatal(err)
	}
	remote := RemoteID("b", th)
	waitFor(t, 10*time.Second, "b's thread listed at the hub", func() bool { _, ok := remoteThread(t, h, remote); return ok })
	read := make(chan error, 1)
	go func() {
		got, err := h.Source().Thread(t.Context(), remote)
		if err == nil && got.ID != remote {
			err = fmt.Errorf("read thread %q, want %q", got.ID, remote)
		}
		read <- err
	}()
	select {
	case <-g.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the hub's read never reached b's store")
	}
	closed := make(chan struct{})
	go func() { l.Close(); close(closed) }()
	// A close that does not wait for the read returns at once; one that
	// waits returns only after the read is let through.
	select {
	case <-closed:
	case <-time.After(time.Second):
	}
	close(g.open)
	select {
	case err := <-read:
		if err != nil {
			t.Fatalf("the hub's read on its way when b closed: %v, want b's answer", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the hub's read on its way when b closed got no answer")
	}
	<-closed
	// Offline at once: a read is answered from the hub's copy, saying so,
	// without waiting for b.
	got, err := h.Source().Thread(t.Context(), remote)
	if err != nil || got.Copy == nil {
		t.Fatalf("a read after b closed: %+v %v, want the thread from the hub's copy", got, err)
	}
	// A thread the hub has no summary of cannot be read from the copy: b is offline.
	if _, err := h.Source().Thread(t.Context(), RemoteID("b", "t_unknown")); !errors.Is(err, ErrNodeOffline) {
		t.Fatalf("a read of an unknown thread after b closed: %v, want %v", err, ErrNodeOffline)
	}
}

// A summary tells a thread's newest open cards, oldest first, at most
// maxSummaryCards: the hub's list shows the newest, as the node's own does.
func TestASummaryTellsTheNewestOpenCards(t *testing.T) {
	t.Parallel()
	var cs []chat.Card
	for i := range maxSummaryCards + 4 {
		cs = append(cs, chat.Card{RequestID: fmt.Sprintf("r%d", i), Kind: chat.CardQuestion, State: chat.CardOpen,
			Request: json.RawMessage(`{"questions":[{"question":"which?"}]}`)})
	}
	got := openCards(cs)
	if len(got) != maxSummaryCards || got[0].RequestID != "r4" || got[len(got)-1].RequestID != fmt.Sprintf("r%d", maxSummaryCards+3) {
		t.Fatalf("a summary of %d open cards tells %d, from %s to %s; want the newest %d, oldest first",
			len(cs), len(got), got[0].RequestID, got[len(got)-1].RequestID, maxSummaryCards)
	}
}

// failingStore fails its next read of a thread's cards once armed, saying so
// on failed.
type failingStore struct {
	*sqlite.Store
	armed  atomic.Bool
	failed chan struct{}
}

func (f *failingStore) Cards(ctx context.Context, id chat.ThreadID, state string) ([]chat.Card, error) {
	if f.armed.CompareAndSwap(true, false) {
		close(f.failed)
		return nil, errors.New("database is locked")
	}
	return f.Store.Cards(ctx, id, state)
}

// A summary b failed to write (its store failed once) reaches the hub
// without any further change on b: a card answered on b does not stay open
// in the hub's thread list.
func TestASummaryTheNodeFailedToWriteIsWrittenAgain(t *testing.T) {
	t.Parallel()
	h := startHub(t, t.TempDir(), "127.0.0.1:0")
	dataB := join(t, h, "b")
	b := newMachine(t)
	const th = chat.ThreadID("t_one")
	card := chat.Card{ThreadID: th, RequestID: "r1", Kind: chat.CardPermission, State: chat.CardOpen,
		Request: json.RawMessage(`{"request_id":"r1","title":"run make"}`), CreatedAt: time.Now()}
	b.write(th, 1, false, card)
	st := &failingStore{Store: b.st, failed: make(chan struct{})}
	l, err := Dial(LinkOptions{DataDir: dataB, Hub: h.Addr(), Node: "b", Heartbeat: testHeartbeat, Store: st, Events: b.hub})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	remote := RemoteID("b", th)
	waitFor(t, 10*time.Second, "b's thread listed at the hub with its card open", func() bool {
		rt, ok := remoteThread(t, h, remote)
		return ok && len(rt.Cards) == 1
	})

	st.armed.Store(true)
	card.State = chat.CardResolved
	b.write(th, 1, false, card) // the card answered on b; its summary fails
	select {
	case <-st.failed:
	case <-time.After(10 * time.Second):
		t.Fatal("b never wrote the answered card's summary")
	}
	waitFor(t, 15*time.Second, "the answered card's summary at the hub", func() bool {
		rt, _ := remoteThread(t, h, remote)
		return rt.Thread.LastSeq == 2 && len(rt.Cards) == 0
	})
}

// A reader at the hub asking a node's thread for more events than one
// answer holds (REST's limit goes up to 10,000; a node answers at most
// srcMaxLimit a request) gets them all, in order: a client paging by "fewer
// than limit means the end" would otherwise miss the thread's tail.
func TestAHubReadsAsManyOfANodesEventsAsAsked(t *testing.T) {
	t.Parallel()
	h := startHub(t, t.TempDir(), "127.0.0.1:0")
	dataB := join(t, h, "b")
	b := newMachine(t)
	const th = chat.ThreadID("t_long")
	b.write(th, 2*srcMaxLimit+500, true)
	l, err := Dial(LinkOptions{DataDir: dataB, Hub: h.Addr(), Node: "b", Heartbeat: testHeartbeat, Store: b.st, Events: b.hub})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	remote := RemoteID("b", th)
	waitFor(t, 10*time.Second, "b's thread listed at the hub", func() bool { _, ok := remoteThread(t, h, remote); return ok })
	evs, err := h.Source().Events(t.Context(), remote, 10, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2*srcMaxLimit+490 || evs[0].Seq != 11 || evs[len(evs)-1].Seq != 2*srcMaxLimit+500 {
		t.Fatalf("the hub read %d events after 10 (%d to %d), want all %d of the node's", len(evs), evs[0].Seq, evs[len(evs)-1].Seq, 2*srcMaxLimit+490)
	}
	for i, ev := range evs {
		if ev.Seq != int64(11+i) {
			t.Fatalf("event %d has seq %d, want %d: a gap or a repeat", i, ev.Seq, 11+i)
		}
	}
}
