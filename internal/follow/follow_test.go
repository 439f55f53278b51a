package follow_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/fanout"
	"github.com/parleyhq/parley/internal/follow"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/sqlite"
)

// env is a real SQLite store and a real hub, written the way the lane writes
// them (commit, then publish), with the route table the router keeps.
type env struct {
	t   *testing.T
	st  *sqlite.Store
	hub *fanout.Fanout

	mu      sync.Mutex
	routes  map[chat.RouteKey]chat.ThreadID
	threads map[chat.ThreadID]*chat.Thread
}

func newEnv(t *testing.T) *env {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "parley.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &env{t: t, st: st, hub: fanout.New(nil), routes: map[chat.RouteKey]chat.ThreadID{}, threads: map[chat.ThreadID]*chat.Thread{}}
}

// Subscribe is the router's: the route table and the hub read together.
func (e *env) Subscribe(ctx context.Context, route chat.RouteKey, buffer int) (*fanout.Sub, *chat.Thread, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	id := e.routes[route]
	sub := e.hub.Subscribe(route, id, buffer)
	if id == "" {
		return sub, nil, nil
	}
	th, err := e.st.Thread(ctx, id)
	if err != nil {
		e.hub.Unsubscribe(sub)
		return nil, nil, err
	}
	return sub, &th, nil
}

func (e *env) deps() follow.Deps { return follow.Deps{Source: e.st, Router: e, Hub: e.hub} }

func (e *env) attach(route chat.RouteKey, id chat.ThreadID) {
	e.mu.Lock()
	e.routes[route] = id
	e.mu.Unlock()
	e.hub.Attach(route, id)
}

// write appends n agent chunks to thread id (made when new), committed then
// published; cards are stored in the same batch.
func (e *env) write(id chat.ThreadID, n int, cards ...chat.Card) {
	e.t.Helper()
	th := e.threads[id]
	if th == nil {
		th = &chat.Thread{ID: id, Agent: "echo", Cwd: "/w", State: chat.ThreadIdle, CreatedAt: time.Now(), UpdatedAt: time.Now()}
		e.threads[id] = th
	}
	var b store.Batch
	for range n {
		th.LastSeq++
		ev, err := chat.NewEvent(id, chat.AgentChunk{Text: fmt.Sprintf("%s#%d ", id, th.LastSeq)}, time.Now())
		if err != nil {
			e.t.Fatal(err)
		}
		ev.Seq = th.LastSeq
		b.Events = append(b.Events, ev)
	}
	cp := *th
	b.Thread, b.Cards = &cp, cards
	if err := e.st.Commit(context.Background(), b); err != nil {
		e.t.Fatal(err)
	}
	for _, ev := range b.Events {
		e.hub.Publish(ev)
	}
}

// follow subscribes route and starts it from since (of sinceThread); the
// follower is closed when the test ends.
func (e *env) follow(opt follow.Options, since int64, sinceThread chat.ThreadID) (*follow.Follower, *seen) {
	e.t.Helper()
	ctx := context.Background()
	f, th, err := follow.Subscribe(ctx, e.deps(), route, opt)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(f.Close)
	s := &seen{}
	if err := f.Start(ctx, th, since, sinceThread, s.emit); err != nil {
		e.t.Fatal(err)
	}
	return f, s
}

// live hands on what the hub queued.
func (e *env) live(f *follow.Follower, s *seen) {
	e.t.Helper()
	if _, err := f.Live(context.Background(), s.emit); err != nil {
		e.t.Fatal(err)
	}
}

// seen records what a follower handed on.
type seen struct{ items []follow.Item }

func (s *seen) emit(it follow.Item) error { s.items = append(s.items, it); return nil }

// seqs lists the seqs of the events handed on, for thread id.
func (s *seen) seqs(id chat.ThreadID) []int64 {
	var out []int64
	for _, it := range s.items {
		if it.Kind == follow.KindEvent && it.Event.Thread == id {
			out = append(out, it.Event.Seq)
		}
	}
	return out
}

func (s *seen) kinds() []follow.Kind {
	var out []follow.Kind
	for _, it := range s.items {
		if len(out) == 0 || out[len(out)-1] != it.Kind {
			out = append(out, it.Kind)
		}
	}
	return out
}

func span(from, to int64) []int64 {
	var out []int64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

var route = chat.RouteKey{Channel: "web", Chat: "c1"}

// Events published while the replay is read are queued in the subscription:
// the live part hands on only what the replay did not, so nothing is missed
// and nothing shown twice.
func TestReplaySinceThenLiveHasNoGapAndNoDuplicate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("t1", 5)
	e.attach(route, "t1")
	ctx := context.Background()
	f, th, err := follow.Subscribe(ctx, e.deps(), route, follow.Options{Buffer: 100, Tail: 500})
	if err != nil || th == nil || th.ID != "t1" {
		t.Fatalf("subscribe: %v, %+v", err, th)
	}
	defer f.Close()
	e.write("t1", 2) // 6, 7: stored and queued before the replay reads the log
	var s seen
	if err := f.Start(ctx, th, 2, "t1", s.emit); err != nil {
		t.Fatal(err)
	}
	if got, want := s.kinds(), []follow.Kind{follow.KindThread, follow.KindEvent, follow.KindTurn, follow.KindCaughtUp}; !slices.Equal(got, want) {
		t.Fatalf("kinds %v, want %v", got, want)
	}
	e.write("t1", 1) // 8, live
	if _, err := f.Live(ctx, s.emit); err != nil {
		t.Fatal(err)
	}
	if got, want := s.seqs("t1"), span(3, 8); !slices.Equal(got, want) {
		t.Fatalf("seqs %v, want %v", got, want)
	}
	for _, it := range s.items {
		if it.Kind == follow.KindEvent && !bytes.Equal(it.Frame, it.Event.Frame()) {
			t.Fatalf("frame %s is not the event's %s", it.Frame, it.Event.Frame())
		}
	}
	if last := s.items[len(s.items)-1]; last.Replay || f.LastSeq() != 8 {
		t.Fatalf("the live event is marked replayed (%v) or the cursor is at %d, want 8", last.Replay, f.LastSeq())
	}
}

// Without since, a client gets the tail; a since that belongs to another
// thread than the route shows is ignored the same way.
func TestTailWhenNoSinceOrSinceOfAnotherThread(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		since       int64
		sinceThread chat.ThreadID
	}{{"no since", -1, ""}, {"since of another thread", 2, "t0"}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.write("t1", 10)
			e.attach(route, "t1")
			_, s := e.follow(follow.Options{Buffer: 100, Tail: 3}, tc.since, tc.sinceThread)
			if got, want := s.seqs("t1"), span(8, 10); !slices.Equal(got, want) {
				t.Fatalf("seqs %v, want %v", got, want)
			}
			done := s.items[len(s.items)-1]
			var rd chat.ReplayDone
			if done.Kind != follow.KindCaughtUp || json.Unmarshal(done.Frame, &rd) != nil || rd.LastSeq != 10 {
				t.Fatalf("last item %v %s, want replay_done with last_seq 10", done.Kind, done.Frame)
			}
		})
	}
}

// Open cards are sent again after the replay, marked restated and without a
// seq; a resolved card is not.
func TestOpenCardsAreRestatedAfterTheReplay(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	card := func(id, kind, state string, p any) chat.Card {
		b, _ := json.Marshal(p)
		return chat.Card{ThreadID: "t1", RequestID: id, Kind: kind, State: state, Request: b, CreatedAt: time.Now()}
	}
	e.write("t1", 3,
		card("r-open", chat.CardPermission, chat.CardOpen, chat.PermissionRequest{RequestID: "r-open", Tool: chat.PermissionTool{Name: "Bash"}}),
		card("r-done", chat.CardPermission, chat.CardResolved, chat.PermissionRequest{RequestID: "r-done", Tool: chat.PermissionTool{Name: "Bash"}}),
		card("q-open", chat.CardQuestion, chat.CardOpen, chat.Question{RequestID: "q-open"}))
	e.attach(route, "t1")
	_, s := e.follow(follow.Options{Buffer: 100, Tail: 500}, 3, "t1")
	var got []string
	for _, it := range s.items {
		if it.Kind != follow.KindCard {
			continue
		}
		var head struct {
			Type      string `json:"type"`
			Thread    string `json:"thread"`
			Seq       int64  `json:"seq"`
			Restated  bool   `json:"restated"`
			RequestID string `json:"request_id"`
		}
		if err := json.Unmarshal(it.Frame, &head); err != nil {
			t.Fatal(err)
		}
		if !head.Restated || head.Seq != 0 || head.Thread != "t1" || !it.Event.Restated {
			t.Errorf("restated card frame %s: want restated, thread t1, no seq", it.Frame)
		}
		got = append(got, head.Type+":"+head.RequestID)
	}
	if want := []string{"permission_request:r-open", "question:q-open"}; !slices.Equal(got, want) {
		t.Fatalf("cards %v, want %v", got, want)
	}
	if got, want := s.kinds(), []follow.Kind{follow.KindThread, follow.KindCard, follow.KindTurn, follow.KindCaughtUp}; !slices.Equal(got, want) {
		t.Fatalf("kinds %v, want %v", got, want)
	}
}

// When the route is attached to another thread, the follower shows that one
// (thread, tail, caught up) in order with the events around the switch, and
// the old thread's later events are not shown.
func TestSwitchOnAttachShowsTheNewThread(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("t1", 3)
	e.write("t2", 4)
	e.attach(route, "t1")
	f, _ := e.follow(follow.Options{Buffer: 100, Tail: 2}, 3, "t1")
	e.write("t1", 1) // 4: before the switch, shown
	e.attach(route, "t2")
	e.write("t1", 1) // 5: after, not shown
	e.write("t2", 1) // 5: live on the new thread
	s := &seen{}
	e.live(f, s)
	if got := s.seqs("t1"); !slices.Equal(got, []int64{4}) {
		t.Fatalf("t1 seqs after the replay %v, want [4]", got)
	}
	// The switch is read after t2#5 was stored: its tail of 2 holds 5, and
	// the queued live 5 is not shown again.
	if got, want := s.seqs("t2"), span(4, 5); !slices.Equal(got, want) {
		t.Fatalf("t2 seqs %v, want %v (its tail of 2, the live 5 once)", got, want)
	}
	if f.Thread() != "t2" {
		t.Fatalf("shows %s, want t2", f.Thread())
	}
	var th2 chat.ThreadEvent
	if s.items[1].Kind != follow.KindThread || json.Unmarshal(s.items[1].Frame, &th2) != nil || th2.Thread.ID != "t2" {
		t.Fatalf("second item %v %s, want the thread t2", s.items[1].Kind, s.items[1].Frame)
	}
}

// A route with no thread gets an idle turn and caught up; its first thread
// comes as a switch.
func TestRouteWithoutThreadFollowsItsFirstThread(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	f, s := e.follow(follow.Options{Buffer: 100, Tail: 500}, -1, "")
	if got, want := s.kinds(), []follow.Kind{follow.KindTurn, follow.KindCaughtUp}; !slices.Equal(got, want) {
		t.Fatalf("kinds %v, want %v", got, want)
	}
	e.write("t1", 2)
	e.attach(route, "t1")
	e.write("t1", 1)
	e.live(f, s)
	if got, want := s.seqs("t1"), span(1, 3); !slices.Equal(got, want) {
		t.Fatalf("seqs %v, want %v", got, want)
	}
}

// A follower the hub dropped for falling behind subscribes again and catches
// up from the log: every event once, in order.
func TestRenewAfterADropCatchesUpWithoutGapOrDuplicate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("t1", 2)
	e.attach(route, "t1")
	f, s := e.follow(follow.Options{Buffer: 3}, 0, "")
	e.write("t1", 2) // 3, 4: queued
	e.live(f, s)
	e.write("t1", 10) // 5..14: the buffer of 3 overflows
	select {
	case <-f.Sub().Done():
	default:
		t.Fatal("the hub did not drop the follower that fell behind")
	}
	if f.Dropped() != fanout.ReasonSlow {
		t.Fatalf("dropped for %q, want %q", f.Dropped(), fanout.ReasonSlow)
	}
	e.live(f, s) // what was queued before the drop
	if err := f.Renew(context.Background(), s.emit); err != nil {
		t.Fatal(err)
	}
	e.write("t1", 1) // 15, live on the new subscription
	e.live(f, s)
	if got, want := s.seqs("t1"), span(1, 15); !slices.Equal(got, want) {
		t.Fatalf("seqs %v, want %v", got, want)
	}
	// Only the history shown at the start is marked Replay: what was missed
	// while dropped happened while the client followed.
	for _, it := range s.items {
		if it.Kind == follow.KindEvent && it.Replay != (it.Event.Seq <= 2) {
			t.Errorf("seq %d marked Replay=%v", it.Event.Seq, it.Replay)
		}
	}
}

// Since, when set, says where a thread shown without since starts (the ACP
// side resumes a returning client there); without Tail nothing of the log is
// replayed.
func TestSinceHookAndNoTail(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		hook func(chat.Thread) int64
		want []int64
	}{{"no hook, no tail", nil, nil}, {"resume at 4", func(chat.Thread) int64 { return 4 }, span(5, 6)}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.write("t1", 6)
			e.attach(route, "t1")
			f, s := e.follow(follow.Options{Buffer: 100, Since: tc.hook}, -1, "")
			if got := s.seqs("t1"); !slices.Equal(got, tc.want) {
				t.Fatalf("seqs %v, want %v", got, tc.want)
			}
			if f.LastSeq() != 6 {
				t.Fatalf("cursor %d, want 6", f.LastSeq())
			}
		})
	}
}

func TestPrunedThrough(t *testing.T) {
	t.Parallel()
	evs := func(seqs ...int64) []chat.Event {
		var out []chat.Event
		for _, s := range seqs {
			out = append(out, chat.Event{Seq: s})
		}
		return out
	}
	for _, tc := range []struct {
		name        string
		since, last int64
		evs         []chat.Event
		want        int64
	}{
		{"nothing missing", 3, 5, evs(4, 5), 0},
		{"a pruned prefix", 0, 9, evs(7, 8, 9), 6},
		{"everything asked for is pruned", 2, 9, nil, 9},
		{"nothing new", 9, 9, nil, 0},
	} {
		if got := follow.PrunedThrough(tc.since, tc.last, tc.evs); got != tc.want {
			t.Errorf("%s: got %d, want %d", tc.name, got, tc.want)
		}
	}
}

// Provisional text is handed on only right after the event it follows: a
// draft queued before events the replay already showed (its final words,
// maybe) is dropped, a draft published after the follower caught up is shown.
func TestDraftOnlyRightAfterItsEvent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("t1", 3)
	e.attach(route, "t1")
	ctx := context.Background()
	f, th, err := follow.Subscribe(ctx, e.deps(), route, follow.Options{Buffer: 100, Tail: 500})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	draft := func(text string, after int64) {
		ev, err := chat.NewEvent("t1", chat.AgentDraft{Text: text, AfterSeq: after}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		e.hub.PublishDraft(fanout.Draft{After: after, Whole: ev})
	}
	draft("stale", 3) // queued; then 4 (its final words) is stored before the replay reads
	e.write("t1", 1)
	var s seen
	if err := f.Start(ctx, th, 0, "t1", s.emit); err != nil {
		t.Fatal(err)
	}
	draft("fresh", 4)
	if _, err := f.Live(ctx, s.emit); err != nil {
		t.Fatal(err)
	}
	var drafts []string
	for _, it := range s.items {
		if it.Kind == follow.KindDraft {
			var d chat.AgentDraft
			it.Event.Decode(&d)
			drafts = append(drafts, d.Text)
		}
	}
	if !slices.Equal(drafts, []string{"fresh"}) {
		t.Fatalf("drafts handed on %q; want only the one after the last event shown", drafts)
	}
	if got := s.seqs("t1"); !slices.Equal(got, span(1, 4)) {
		t.Fatalf("seqs %v", got)
	}
}

// A follower that takes appends hands on a draft that only grew as what it
// adds, and only onto the draft it handed on last: one whose draft before it
// was dropped (or never published to it) gets it whole, and so does a client
// that did not ask for appends. What the client shows (chat.AgentDraft.Onto)
// is the whole text either way.
func TestDraftAppendsOnlyOntoTheDraftHandedOn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("t1", 3)
	e.attach(route, "t1")
	ctx := context.Background()
	start := func(appends bool) (*follow.Follower, *seen) {
		f, th, err := follow.Subscribe(ctx, e.deps(), route, follow.Options{Buffer: 100, Tail: 500, DraftAppends: appends})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(f.Close)
		s := &seen{}
		if err := f.Start(ctx, th, 0, "t1", s.emit); err != nil {
			t.Fatal(err)
		}
		s.items = nil
		return f, s
	}
	fa, sa := start(true)
	fw, sw := start(false)
	var prev chat.AgentDraft
	draft := func(text string, after int64) {
		t.Helper()
		d := chat.AgentDraft{Text: text, AfterSeq: after, ID: prev.ID + 1}
		ev, err := chat.NewEvent("t1", d, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		pub := fanout.Draft{ID: d.ID, After: after, Whole: ev}
		if prev.ID != 0 && strings.HasPrefix(text, prev.Text) {
			app, err := chat.NewEvent("t1", chat.AgentDraft{Text: text[len(prev.Text):], AfterSeq: after, ID: d.ID, Extends: prev.ID}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			pub.Append, pub.Extends = &app, prev.ID
		}
		e.hub.PublishDraft(pub)
		prev = d
		for _, f := range []struct {
			*follow.Follower
			*seen
		}{{fa, sa}, {fw, sw}} {
			if _, err := f.Live(ctx, f.emit); err != nil {
				t.Fatal(err)
			}
		}
	}
	handed := func(s *seen) (frames []string, shown string) {
		var id int64
		for _, it := range s.items {
			if it.Kind != follow.KindDraft {
				continue
			}
			var d chat.AgentDraft
			if err := it.Event.Decode(&d); err != nil {
				t.Fatal(err)
			}
			frames = append(frames, fmt.Sprintf("%d+%q", d.Extends, d.Text))
			id, shown = d.Onto(id, shown)
		}
		return frames, shown
	}
	draft("The", 3)
	draft("The first", 3)
	draft("The first line", 2) // behind what the followers showed: dropped
	draft("The first line is", 3)
	draft("The first line is long", 3)
	frames, shown := handed(sa)
	if want := []string{`0+"The"`, `1+" first"`, `0+"The first line is"`, `4+" long"`}; !slices.Equal(frames, want) {
		t.Errorf("a follower taking appends handed on %q; want %q", frames, want)
	}
	if shown != "The first line is long" {
		t.Errorf("its client shows %q", shown)
	}
	frames, shown = handed(sw)
	if want := []string{`0+"The"`, `0+"The first"`, `0+"The first line is"`, `0+"The first line is long"`}; !slices.Equal(frames, want) {
		t.Errorf("a follower not taking appends handed on %q; want %q", frames, want)
	}
	if shown != "The first line is long" {
		t.Errorf("its client shows %q", shown)
	}
	// A client given an append onto a draft it does not show shows none.
	if id, text := (chat.AgentDraft{Text: " long", ID: 5, Extends: 4}).Onto(3, "The first"); id != 0 || text != "" {
		t.Errorf("an append onto another draft shows %d %q; want nothing", id, text)
	}
}

// asideStore is a Source holding events of a thread outside its log, as a
// cluster's hub holds a node's thread's messages that failed before the
// node took them.
type asideStore struct {
	*sqlite.Store
	asides map[chat.ThreadID][]chat.Event
}

func (s asideStore) Asides(_ context.Context, id chat.ThreadID) ([]chat.Event, error) {
	return s.asides[id], nil
}

// Events a thread holds outside its log (no seq) are shown among its
// replay by their time, each once, and live as they come to the thread's
// views and to its sender's route, even one showing no thread yet; another
// thread's are not.
func TestAsidesAreShownAmongTheReplayByTimeAndLive(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("t1", 4)
	evs, err := e.st.Events(context.Background(), "t1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	aside := func(id chat.ThreadID, msg string, at time.Time) chat.Event {
		ev, err := chat.NewEvent(id, chat.Delivery{MessageID: msg, State: chat.DeliveryFailed, Detail: "why"}, at)
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	early, late := aside("t1", "early", evs[2].TS.Add(-time.Nanosecond)), aside("t1", "late", evs[3].TS.Add(time.Hour))
	src := asideStore{Store: e.st, asides: map[chat.ThreadID][]chat.Event{"t1": {early, late}}}
	e.attach(route, "t1")
	f, th, err := follow.Subscribe(context.Background(), follow.Deps{Source: src, Router: e, Hub: e.hub}, route, follow.Options{Buffer: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := &seen{}
	if err := f.Start(context.Background(), th, 0, "t1", s.emit); err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, it := range s.items {
		if it.Kind != follow.KindEvent {
			continue
		}
		if it.Event.Seq > 0 {
			order = append(order, fmt.Sprint(it.Event.Seq))
			continue
		}
		var d chat.Delivery
		if err := it.Event.Decode(&d); err != nil || !it.Replay {
			t.Fatalf("an aside handed on as %+v", it)
		}
		order = append(order, d.MessageID)
	}
	// early comes before the first event stamped after it (seq 3 at the
	// latest); late after them all.
	var want []string
	for _, ev := range evs {
		if early.TS.Before(ev.TS) && !slices.Contains(want, "early") {
			want = append(want, "early")
		}
		want = append(want, fmt.Sprint(ev.Seq))
	}
	want = append(want, "late")
	if !slices.Equal(order, want) {
		t.Fatalf("the replay handed on %v, want %v", order, want)
	}

	// Live: the thread's, and one for its sender's route; another thread's not.
	other := chat.RouteKey{Channel: "web", Chat: "elsewhere"}
	f2, _, err := follow.Subscribe(context.Background(), follow.Deps{Source: src, Router: e, Hub: e.hub}, other, follow.Options{Buffer: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer f2.Close()
	e.hub.PublishAside(other, aside("t1", "now", time.Now()))
	e.hub.PublishAside(other, aside("t2", "mine", time.Now()))
	s.items = nil
	s2 := &seen{}
	e.live(f, s)
	e.live(f2, s2)
	got := func(s *seen) (out []string) {
		for _, it := range s.items {
			var d chat.Delivery
			_ = it.Event.Decode(&d)
			out = append(out, string(it.Event.Thread)+"/"+d.MessageID)
		}
		return out
	}
	if g := got(s); !slices.Equal(g, []string{"t1/now"}) {
		t.Fatalf("the thread's view got %v live, want only its own aside", g)
	}
	if g := got(s2); !slices.Equal(g, []string{"t1/now", "t2/mine"}) {
		t.Fatalf("the sender's route, showing no thread, got %v live, want both of its asides", g)
	}
}
