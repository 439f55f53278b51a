package push_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/push"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/sqlite"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/webpushsvc"
)

// nodes is other machines' thread summaries as the hub holds them.
type nodes = push.TestRemote

func newNodes(ths ...push.RemoteThread) *nodes { return push.NewTestRemote(ths...) }

// pokes is the hub's watcher of its own threads, poked by hand.
type pokes struct {
	mu    sync.Mutex
	ids   []chat.ThreadID
	ready chan struct{}
}

func (p *pokes) Ready() <-chan struct{} { return p.ready }
func (p *pokes) Take() []chat.ThreadID {
	p.mu.Lock()
	defer p.mu.Unlock()
	ids := p.ids
	p.ids = nil
	return ids
}
func (p *pokes) poke(id chat.ThreadID) {
	p.mu.Lock()
	p.ids = append(p.ids, id)
	p.mu.Unlock()
	select {
	case p.ready <- struct{}{}:
	default:
	}
}

// flaky is the hub's store refusing the next outbox writes that hold a push.
type flaky struct {
	*sqlite.Store
	refuse atomic.Int32
}

func (f *flaky) PushEnqueue(ctx context.Context, items []store.PushItem) (int, error) {
	if len(items) > 0 && f.refuse.Add(-1) >= 0 {
		return 0, errors.New("sqlite: disk I/O error")
	}
	return f.Store.PushEnqueue(ctx, items)
}

// hubRig is a hub's push service on a real store and data directory, which
// outlive it (a restart is a new service on both), and the Web Push stand-in.
type hubRig struct {
	dir   string
	st    *flaky
	svc   *webpushsvc.Service
	nodes *nodes
	pokes *pokes
	s     *push.Service
}

func startHubRig(t *testing.T, ns *nodes) *hubRig {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "parley.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r := &hubRig{dir: dir, st: &flaky{Store: st}, svc: webpushsvc.Start(t), nodes: ns, pokes: &pokes{ready: make(chan struct{}, 1)}}
	r.start(t)
	r.svc.ExpectKey(t, r.s.PublicKey())
	return r
}

// start starts the service (again: the hub restarted).
func (r *hubRig) start(t *testing.T) {
	t.Helper()
	if r.s != nil {
		r.s.Close()
		r.nodes.Restart()
	}
	s, err := push.Start(push.Options{DataDir: r.dir, Store: r.st, Watch: r.pokes, Remote: r.nodes, Machine: "hub",
		Net: webpushsvc.Net(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	r.s = s
}

// device subscribes a device and turns on its optional pushes.
func (r *hubRig) device(t *testing.T, name string, turns, errs bool) *webpushsvc.Sub {
	t.Helper()
	sub, js := r.svc.Subscribe(t)
	if err := r.s.Subscribe(name, js); err != nil {
		t.Fatal(err)
	}
	if _, err := r.s.SetPrefs(name, &turns, &errs, nil); err != nil {
		t.Fatal(err)
	}
	return sub
}

// settled waits until the outbox holds no push still to send: each queued
// has reached the stand-in.
func (r *hubRig) settled(t *testing.T) []webpushsvc.Push {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, func() bool {
		due, err := r.st.PushDue(context.Background(), time.Now().Add(time.Hour), 10)
		return err == nil && len(due) == 0
	}, "every queued push sent")
	return r.svc.Pushes()
}

// refused checks that the store refused the outbox write it was told to.
func (r *hubRig) refused(t *testing.T) {
	t.Helper()
	if r.st.refuse.Load() > 0 {
		t.Fatal("the store was never asked to queue the push")
	}
}

func kinds(ps []webpushsvc.Push, sub *webpushsvc.Sub) string {
	var ks []string
	for _, m := range webpushsvc.Messages[push.Message](ps, sub) {
		ks = append(ks, m.Kind)
	}
	return strings.Join(ks, " ")
}

// bThread is b's thread t_1 as b's summary tells it at the hub.
func bThread(turn, errv *push.Notice, cards ...push.Card) push.RemoteThread {
	return push.RemoteThread{Thread: chat.Thread{ID: "t_1@b", Agent: "claude", Node: "b"}, AgentName: "Claude Code",
		Cards: cards, Turn: turn, Error: errv}
}

func card(id string) push.Card {
	return push.Card{RequestID: id, Kind: chat.CardPermission, Asks: "asks for permission: Bash"}
}

// Another machine's finished turn and error, from its thread summary, push
// once to each device of the hub that turned that kind on, decrypted as the
// phone shows them (the agent and machine, the words for the code, the
// thread's tag); none to a device that did not. b telling the same summary
// again (a reconnect) and the hub's restart on the same store push nothing
// again.
func TestANodesFinishedTurnPushesOncePerOptedInDevice(t *testing.T) {
	t.Parallel()
	ns := newNodes(bThread(nil, nil))
	r := startHubRig(t, ns)
	phone := r.device(t, "phone", true, true)
	laptop := r.device(t, "laptop", false, true)
	tablet := r.device(t, "tablet", false, false)
	id := chat.ThreadID("t_1@b")

	turn := &push.Notice{Seq: 7, TS: time.Now(), Code: chat.StopEndTurn}
	ns.Set(bThread(turn, nil))
	ps := r.svc.WaitFor(t, 10*time.Second, "the phone's turn push", func(ps []webpushsvc.Push) bool { return kinds(ps, phone) == "turn" })
	if m := webpushsvc.Messages[push.Message](ps, phone)[0]; m.Title != "Claude Code on b" || m.Body != "finished its turn" ||
		m.Tag != push.ThreadTag(id) || m.Thread != string(id) || !strings.Contains(m.URL, string(id)) {
		t.Fatalf("the phone would show %+v", m)
	}

	failed := &push.Notice{Seq: 9, TS: time.Now(), Code: chat.CodeAgent}
	ns.Set(bThread(turn, failed))
	ps = r.svc.WaitFor(t, 10*time.Second, "the error pushes", func(ps []webpushsvc.Push) bool {
		return kinds(ps, phone) == "turn error" && kinds(ps, laptop) == "error"
	})
	if m := webpushsvc.Messages[push.Message](ps, laptop)[0]; m.Title != "Claude Code on b" || m.Body != "the agent failed" {
		t.Fatalf("the laptop would show %+v", m)
	}

	// b links again and tells the same summary; then a card opens, which
	// every device hears of: by then the summary told again pushed nothing.
	ns.Set(bThread(turn, failed))
	ns.Set(bThread(turn, failed, card("r1")))
	r.svc.WaitFor(t, 10*time.Second, "the card's push", func(ps []webpushsvc.Push) bool { return kinds(ps, tablet) == "open" })
	ps = r.settled(t)
	if p, l, tb := kinds(ps, phone), kinds(ps, laptop), kinds(ps, tablet); p != "turn error open" || l != "error open" || tb != "open" {
		t.Fatalf("after b told its summary again: phone %q, laptop %q, tablet %q", p, l, tb)
	}

	// The hub restarts on the same store; b's next card is the next push.
	r.start(t)
	ns.Set(bThread(turn, failed, card("r1"), card("r2")))
	r.svc.WaitFor(t, 10*time.Second, "the second card's push", func(ps []webpushsvc.Push) bool { return kinds(ps, tablet) == "open open" })
	ps = r.settled(t)
	if p, l := kinds(ps, phone), kinds(ps, laptop); p != "turn error open open" || l != "error open open" {
		t.Fatalf("after the hub's restart: phone %q, laptop %q", p, l)
	}
	if rej := r.svc.Rejected(); len(rej) != 0 {
		t.Fatalf("the push service refused pushes: %v", rej)
	}
}

// A turn a machine finished before this hub pushed other machines' turns
// (the hub upgraded, with b's threads done long ago) or before the machine
// joined pushes nothing, even to a device that turned turn pushes on before;
// the turns after do. The first is kept: a turn b finished while the hub
// was down is pushed when it is back.
func TestANodesTurnsFromBeforeTheHubPushedThemDoNotPush(t *testing.T) {
	t.Parallel()
	ns := newNodes()
	r := startHubRig(t, ns)
	phone := r.device(t, "phone", true, false)
	r.s.Close()
	if err := os.Remove(filepath.Join(r.dir, push.SinceFile)); err != nil { // the hub before the upgrade
		t.Fatal(err)
	}
	joined := time.Now().Add(-time.Hour)
	thread := func(id chat.ThreadID, turn *push.Notice, joined time.Time, cards ...push.Card) push.RemoteThread {
		return push.RemoteThread{Thread: chat.Thread{ID: id, Agent: "claude", Node: string(id[strings.Index(string(id), "@")+1:])},
			Turn: turn, Joined: joined, Cards: cards}
	}
	// b's summary at the upgraded hub's start: a turn from before, and a
	// card, whose push says the summary was looked at.
	old := &push.Notice{Seq: 5, TS: time.Now(), Code: chat.StopEndTurn}
	ns.Set(thread("t_1@b", old, joined, card("r1")))
	r.start(t)
	r.svc.WaitFor(t, 10*time.Second, "the card's push", func(ps []webpushsvc.Push) bool { return kinds(ps, phone) == "open" })
	newer := &push.Notice{Seq: 11, TS: time.Now(), Code: chat.StopMaxTokens}
	ns.Set(thread("t_1@b", newer, joined, card("r1")))
	r.svc.WaitFor(t, 10*time.Second, "the newer turn's push", func(ps []webpushsvc.Push) bool { return kinds(ps, phone) != "open" })
	ps := r.settled(t)
	if k, ms := kinds(ps, phone), webpushsvc.Messages[push.Message](ps, phone); k != "open turn" || ms[1].Body != "stopped: the model's output limit" {
		t.Fatalf("the phone got %q, want the card's and the newer turn's: %s", k, webpushsvc.Summary(ps))
	}

	r.s.Close()
	while := &push.Notice{Seq: 3, TS: time.Now(), Code: chat.StopEndTurn} // b finished t_2's turn while the hub was down
	r.start(t)
	ns.Set(thread("t_1@b", newer, joined, card("r1")), thread("t_2@b", while, joined))
	ps = r.svc.WaitFor(t, 10*time.Second, "t_2's push", func(ps []webpushsvc.Push) bool { return kinds(ps, phone) == "open turn turn" })
	if m := webpushsvc.Messages[push.Message](ps, phone)[2]; m.Thread != "t_2@b" || m.Title != "claude on b" {
		t.Fatalf("the phone would show %+v", m)
	}

	// c joins with a thread whose turn ended before (and a card open, which
	// pushes); its next turn pushes.
	before := &push.Notice{Seq: 8, TS: time.Now(), Code: chat.StopEndTurn}
	cJoined := time.Now()
	ns.Set(thread("t_1@b", newer, joined, card("r1")), thread("t_2@b", while, joined), thread("t_9@c", before, cJoined, card("r9")))
	r.svc.WaitFor(t, 10*time.Second, "c's card's push", func(ps []webpushsvc.Push) bool { return kinds(ps, phone) != "open turn turn" })
	after := &push.Notice{Seq: 9, TS: time.Now(), Code: chat.StopEndTurn}
	ns.Set(thread("t_1@b", newer, joined, card("r1")), thread("t_2@b", while, joined), thread("t_9@c", after, cJoined, card("r9")))
	r.svc.WaitFor(t, 10*time.Second, "c's newer turn's push", func(ps []webpushsvc.Push) bool { return strings.Count(kinds(ps, phone), "turn") >= 3 })
	ps = r.settled(t)
	if k := kinds(ps, phone); k != "open turn turn open turn" {
		t.Fatalf("the phone got %q: %s", k, webpushsvc.Summary(ps))
	}
}

// A push the hub's store refused to queue once (its outbox write failed) is
// queued at the next pass, not lost: a card of the hub's own thread, a card
// of b's thread, b's finished turn.
func TestAPushTheStoreRefusedIsQueuedAgain(t *testing.T) {
	t.Parallel()
	ns := newNodes(bThread(nil, nil))
	r := startHubRig(t, ns)
	phone := r.device(t, "phone", true, false)

	// The hub's own thread: a card opens, its push is refused once.
	ctx := context.Background()
	th := chat.Thread{ID: "t_own", Agent: "claude", Cwd: "/w", State: chat.ThreadIdle, CreatedAt: time.Now(), UpdatedAt: time.Now()}
	c := chat.Card{ThreadID: th.ID, RequestID: "r0", Kind: chat.CardPermission, State: chat.CardOpen,
		Request: json.RawMessage(`{"request_id":"r0","title":"run make"}`), CreatedAt: time.Now()}
	r.st.refuse.Store(1)
	if err := r.st.Store.Commit(ctx, store.Batch{Thread: &th, Cards: []chat.Card{c}}); err != nil {
		t.Fatal(err)
	}
	r.pokes.poke(th.ID)
	ps := r.svc.WaitFor(t, 10*time.Second, "the own card's push", func(ps []webpushsvc.Push) bool { return kinds(ps, phone) == "open" })
	if m := webpushsvc.Messages[push.Message](ps, phone)[0]; m.Tag != push.Tag(th.ID, "r0") {
		t.Fatalf("the phone would show %+v", m)
	}
	r.refused(t)

	// b's card.
	r.st.refuse.Store(1)
	ns.Set(bThread(nil, nil, card("r1")))
	ps = r.svc.WaitFor(t, 10*time.Second, "b's card's push", func(ps []webpushsvc.Push) bool { return kinds(ps, phone) == "open open" })
	if m := webpushsvc.Messages[push.Message](ps, phone)[1]; m.Tag != push.Tag("t_1@b", "r1") {
		t.Fatalf("the phone would show %+v", m)
	}
	r.refused(t)

	// b's finished turn.
	r.st.refuse.Store(1)
	ns.Set(bThread(&push.Notice{Seq: 4, TS: time.Now(), Code: chat.StopEndTurn}, nil, card("r1")))
	r.svc.WaitFor(t, 10*time.Second, "b's turn's push", func(ps []webpushsvc.Push) bool { return kinds(ps, phone) == "open open turn" })
	r.refused(t)
}
