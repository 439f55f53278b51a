package fanout

import (
	"slices"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
)

func TestPublishReachesEveryRouteShowingTheThread(t *testing.T) {
	t.Parallel()
	h := New(nil)
	a := h.Subscribe(chat.RouteKey{Channel: "web", Chat: "a"}, "t1", 10)
	b := h.Subscribe(chat.RouteKey{Channel: "tui", Chat: "b"}, "t1", 10)
	other := h.Subscribe(chat.RouteKey{Channel: "web", Chat: "c"}, "t2", 10)
	h.Publish(ev("t1", 1))
	h.Publish(ev("t1", 2))
	for _, s := range []*Sub{a, b} {
		got := s.Take()
		if len(got) != 2 || got[0].Seq != 1 || got[1].Seq != 2 {
			t.Fatalf("got %+v, want seq 1 then 2", got)
		}
	}
	if got := other.Take(); len(got) != 0 {
		t.Fatalf("a route showing another thread got %+v", got)
	}
}

func TestFullBacklogDropsOnlyThatSubscription(t *testing.T) {
	t.Parallel()
	var drops []string
	h := New(func(r string) { drops = append(drops, r) })
	slow := h.Subscribe(chat.RouteKey{Channel: "web", Chat: "s"}, "t", 2)
	fast := h.Subscribe(chat.RouteKey{Channel: "web", Chat: "f"}, "t", 2)
	for seq := int64(1); seq <= 5; seq++ {
		h.Publish(ev("t", seq))
		fast.Take() // keeps up
	}
	select {
	case <-slow.Done():
	default:
		t.Fatal("slow subscription not dropped")
	}
	if h.Reason(slow) != ReasonSlow || len(drops) != 1 {
		t.Fatalf("reason %q, drops %v", h.Reason(slow), drops)
	}
	select {
	case <-fast.Done():
		t.Fatal("fast subscription dropped")
	default:
	}
	if h.Count() != 1 {
		t.Fatalf("count %d, want 1", h.Count())
	}
}

func TestAttachSwitchesInOrderWithEvents(t *testing.T) {
	t.Parallel()
	h := New(nil)
	route := chat.RouteKey{Channel: "web", Chat: "r"}
	s := h.Subscribe(route, "old", 10)
	h.Publish(ev("old", 7))
	h.Attach(route, "new")
	h.Publish(ev("old", 8)) // no longer shown
	h.Publish(ev("new", 1))
	got := s.Take()
	if len(got) != 3 || got[0].Seq != 7 || !got[1].Switch || got[1].Thread != "new" || got[2].Thread != "new" || got[2].Seq != 1 {
		t.Fatalf("got %+v, want old#7, switch to new, new#1", got)
	}
	h.Unsubscribe(s)
	h.Unsubscribe(s) // twice is fine
	if h.Count() != 0 {
		t.Fatal("still subscribed")
	}
}

// A watcher hears which threads changed, coalesced: many events of one thread
// are one entry, and nothing waits on a watcher that does not look.
func TestWatcherCoalescesChangedThreads(t *testing.T) {
	t.Parallel()
	h := New(nil)
	w := h.Watch()
	for seq := range int64(1000) {
		h.Publish(ev("t1", seq+1))
	}
	h.Publish(ev("t2", 1))
	select {
	case <-w.Ready():
	default:
		t.Fatal("the watcher was not signalled")
	}
	if got := w.Take(); !slices.Equal(got, []chat.ThreadID{"t1", "t2"}) {
		t.Fatalf("changed: %v, want [t1 t2]", got)
	}
	if got := w.Take(); len(got) != 0 {
		t.Fatalf("after Take: %v, want none", got)
	}
	h.Unwatch(w)
	h.Publish(ev("t3", 1))
	if got := w.Take(); len(got) != 0 || h.Watchers() != 0 {
		t.Fatalf("after Unwatch: %v changed, %d watchers; want none", got, h.Watchers())
	}
}

func ev(thread chat.ThreadID, seq int64) chat.Event {
	return chat.Event{Type: chat.TypeAgentChunk, Thread: thread, Seq: seq, Payload: []byte(`{"text":"x"}`)}
}

// A lane step's events go out together: in seq order, one wake for the
// subscriber, and a subscriber already behind by its buffer is dropped (it
// catches up from the log), never given part of a step.
func TestPublishOfAStepIsOneWakeAndAllOrNothing(t *testing.T) {
	t.Parallel()
	h := New(nil)
	wakes := 0
	s := h.Subscribe(chat.RouteKey{Channel: "web", Chat: "a"}, "t", 10)
	s.SetWake(func() { wakes++ })
	small := h.Subscribe(chat.RouteKey{Channel: "web", Chat: "b"}, "t", 2)
	w := h.Watch()
	h.PublishStep([]chat.Event{ev("t", 1), ev("t", 2), ev("t", 3)})
	got := s.Take()
	if len(got) != 3 || got[0].Seq != 1 || got[2].Seq != 3 || wakes != 1 {
		t.Fatalf("got %d items (%+v) with %d wakes; want seq 1–3 and one wake", len(got), got, wakes)
	}
	if ids := w.Take(); !slices.Equal(ids, []chat.ThreadID{"t"}) {
		t.Fatalf("watcher heard %v", ids)
	}
	// small holds the step of 3 (it was behind by nothing); one more step
	// finds it 3 behind with a buffer of 2: dropped, and given none of it.
	h.PublishStep([]chat.Event{ev("t", 4), ev("t", 5)})
	select {
	case <-small.Done():
	default:
		t.Fatal("a subscriber 3 events behind with a buffer of 2 was not dropped")
	}
	if q := small.Take(); len(q) != 3 || q[2].Seq != 3 {
		t.Fatalf("the dropped subscriber's queue: %+v; want seq 1–3, none of the step it could not take", q)
	}
	// The buffer Take returned is reused by the next Take, cleared first.
	h.Publish(ev("t", 6))
	if got := s.Take(); len(got) != 3 || got[0].Seq != 4 || got[2].Seq != 6 {
		t.Fatalf("second take: %+v", got)
	}
}

// A step longer than a subscriber's whole buffer (a lane recovering many
// queued inputs, a burst of 256 chunks, limits.conn_buffer at its minimum of
// 16) does not drop a subscriber that is not behind: dropping it would make
// it reconnect and replay, every such step (review B9).
func TestAStepLongerThanTheBufferReachesASubscriberThatKeepsUp(t *testing.T) {
	t.Parallel()
	var drops []string
	h := New(func(r string) { drops = append(drops, r) })
	s := h.Subscribe(chat.RouteKey{Channel: "web", Chat: "a"}, "t", 16)
	seq := int64(0)
	for range 3 {
		step := make([]chat.Event, 256)
		for i := range step {
			seq++
			step[i] = ev("t", seq)
		}
		h.PublishStep(step)
		got := s.Take() // keeps up: takes each step before the next
		if len(got) != 256 || got[0].Seq != seq-255 || got[255].Seq != seq {
			t.Fatalf("took %d items; want the step's 256, seq %d–%d", len(got), seq-255, seq)
		}
	}
	select {
	case <-s.Done():
		t.Fatalf("dropped (%s), with an empty queue before each step", h.Reason(s))
	default:
	}
	if len(drops) != 0 {
		t.Fatalf("drops: %v", drops)
	}
}

// A watcher of some event types hears of a thread only when a step holds one
// of them (push is not woken by every streamed chunk), and of a deletion
// always.
func TestWatcherOfTypesHearsOnlyThose(t *testing.T) {
	t.Parallel()
	h := New(nil)
	w := h.WatchTypes(chat.TypePromptDone)
	all := h.Watch()
	for seq := range int64(100) {
		h.Publish(ev("t1", seq+1))
	}
	if got := w.Take(); len(got) != 0 {
		t.Fatalf("heard of %v after chunks only", got)
	}
	select {
	case <-w.Ready():
		t.Fatal("signalled for chunks only")
	default:
	}
	if got := all.Take(); !slices.Equal(got, []chat.ThreadID{"t1"}) {
		t.Fatalf("the watcher of everything heard %v", got)
	}
	h.PublishStep([]chat.Event{ev("t1", 101), {Type: chat.TypePromptDone, Thread: "t1", Seq: 102, Payload: []byte(`{}`)}})
	if got := w.Take(); !slices.Equal(got, []chat.ThreadID{"t1"}) {
		t.Fatalf("after a turn's end: %v, want [t1]", got)
	}
	h.CloseThread("t2", ReasonDeleted)
	if got := w.Take(); !slices.Equal(got, []chat.ThreadID{"t2"}) {
		t.Fatalf("after a deletion: %v, want [t2]", got)
	}
}
