// Package fanout fans a thread's events out to every connection of every route
// attached to it. Publishing never waits: each subscription has a bounded buffer,
// and one that is full is closed with a reason; its client catches up by replaying
// the log from its last seq.
package fanout

import (
	"sync"

	"github.com/parleyhq/parley/internal/chat"
)

// Item is one thing for a subscriber: a sequenced event of its route's thread,
// or (Switch) word that the route now shows another thread (or, Reshow, to
// show its thread again). The event and its
// wire frame are built once by Publish and shared by every subscriber (one
// *Item in every queue): nobody decodes the frame again to learn what it is,
// and nobody may change it.
type Item struct {
	Thread chat.ThreadID
	Seq    int64
	Event  chat.Event // the event as stored (Payload is its own fields)
	Frame  []byte     // Event.Frame(), as it goes on the wire
	Switch bool
	// Draft marks provisional text (chat.AgentDraft, PublishDraft): no seq,
	// valid only right after the event After.
	Draft bool
	After int64
	// DraftID is a draft's ID (chat.AgentDraft). Append, when the draft only
	// adds to the one published before it, is the same draft as that
	// addition (its Extends names the one before), for views that take
	// appends and were given the one before (follow picks).
	DraftID int64
	Extends int64
	Append  *Item
	// Aside marks an event of the thread kept outside its log (PublishAside):
	// no seq.
	Aside bool
}

// Close reasons.
const (
	ReasonSlow     = "too slow: the connection fell behind; reconnect with since"
	ReasonShutdown = "parley is shutting down"
	ReasonDeleted  = "the thread was deleted"
)

// Sub is one connection's subscription to its route. Its queue grows with the
// backlog up to a bound, so an idle connection costs almost nothing.
type Sub struct {
	Route chat.RouteKey
	ready chan struct{} // signalled (capacity 1) when items are queued
	done  chan struct{}

	qmu    sync.Mutex // after Fanout.mu, never before (docs/locks.md)
	q      []*Item
	spare  []*Item // the slice the last Take returned, reused by the next one
	max    int
	wake   func()       // called after each push, when set
	onDrop func(string) // called (on its own goroutine) when the hub drops the subscription

	// guarded by Fanout.mu
	thread chat.ThreadID
	reason string
	closed bool
}

// Ready is signalled when items wait; Take them all.
func (s *Sub) Ready() <-chan struct{} { return s.ready }

// spareMax bounds the queue buffer a subscription keeps between bursts (2 KiB
// of pointers): a busy connection reuses it instead of growing a new queue for
// every burst, and an idle one holds little.
const spareMax = 256

// Take returns every queued item, in publish order. The slice is the caller's
// until its next Take, which reuses it: one consumer takes at a time.
func (s *Sub) Take() []*Item {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	q := s.q
	clear(s.spare) // what the caller was done with: let its events go
	s.q = s.spare[:0]
	s.spare = nil
	if cap(q) <= spareMax {
		s.spare = q
	}
	return q
}

// Pending reports whether items wait.
func (s *Sub) Pending() bool {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	return len(s.q) > 0
}

// SetWake makes every push call wake (which must not block), for consumers that
// start a writer only when there is something to write.
func (s *Sub) SetWake(wake func()) {
	s.qmu.Lock()
	s.wake = wake
	s.qmu.Unlock()
}

// SetOnDrop makes the hub call f with the reason when it drops the subscription
// (slow, shutdown); not called for Unsubscribe.
func (s *Sub) SetOnDrop(f func(reason string)) {
	s.qmu.Lock()
	s.onDrop = f
	s.qmu.Unlock()
}

// push queues items (all of them, or none and false when the subscriber is
// already max items behind) and signals the consumer once. A step is taken
// whole while the backlog is under max, however long the step: a lane step
// may be longer than a small buffer (limits.conn_buffer may be 16, a step
// 256 events), and dropping a subscriber that is not behind at all would
// only make it reconnect and replay, every such step. The queue so holds at
// most max-1 items plus one step.
func (s *Sub) push(its ...*Item) bool {
	s.qmu.Lock()
	if len(s.q) >= s.max {
		s.qmu.Unlock()
		return false
	}
	s.q = append(s.q, its...)
	wake := s.wake
	s.qmu.Unlock()
	select {
	case s.ready <- struct{}{}:
	default:
	}
	if wake != nil {
		wake()
	}
	return true
}

// Done is closed when the hub drops the subscription; Reason says why.
func (s *Sub) Done() <-chan struct{} { return s.done }

// Fanout is safe for concurrent use. One mutex guards the subscription tables; it is
// held only to copy nothing and send without blocking, so publishers never wait
// on a connection.
//
// Lock order (docs/locks.md): Fanout.mu, then a Sub's qmu or a Watcher's
// mu (a push or a mark under Fanout.mu). qmu and Watcher.mu are leaves: nothing
// is locked under them, and no callback runs under any of the three (wake
// must not block; onDrop runs on its own goroutine).
type Fanout struct {
	mu       sync.Mutex
	byThread map[chat.ThreadID]map[*Sub]struct{}
	byRoute  map[chat.RouteKey]map[*Sub]struct{}
	watchers map[*Watcher]struct{}
	onDrop   func(reason string)
	tap      func(Item) // SetTap; called outside the lock
}

// New returns an empty hub. onDrop, when set, is called (outside no lock) for each
// subscription dropped, for metrics.
func New(onDrop func(reason string)) *Fanout {
	return &Fanout{
		byThread: map[chat.ThreadID]map[*Sub]struct{}{},
		byRoute:  map[chat.RouteKey]map[*Sub]struct{}{},
		watchers: map[*Watcher]struct{}{},
		onDrop:   onDrop,
	}
}

// Subscribe registers a connection on route, which currently shows thread ("" for
// none yet). buffer bounds how far it may fall behind: a subscriber holding
// buffer items is dropped at the next publish.
func (h *Fanout) Subscribe(route chat.RouteKey, thread chat.ThreadID, buffer int) *Sub {
	s := &Sub{Route: route, ready: make(chan struct{}, 1), done: make(chan struct{}), max: buffer, thread: thread}
	h.mu.Lock()
	defer h.mu.Unlock()
	add(h.byRoute, route, s)
	if thread != "" {
		add(h.byThread, thread, s)
	}
	return s
}

// Unsubscribe removes a subscription; safe to call after the hub dropped it.
func (h *Fanout) Unsubscribe(s *Sub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.removeLocked(s, "")
}

// Reason says why the hub dropped s ("" while it is live or after Unsubscribe).
func (h *Fanout) Reason(s *Sub) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return s.reason
}

// Publish sends one sequenced, stored event to every subscriber showing its
// thread (PublishStep with one event).
func (h *Fanout) Publish(ev chat.Event) { h.PublishStep([]chat.Event{ev}) }

// PublishStep sends sequenced, stored events (one lane step's, of one thread,
// in seq order) to every subscriber showing their thread. Each frame is built
// here, once, outside the lock; each subscriber takes the whole step at once
// (one lock, one wake), and a watcher hears of the thread once.
func (h *Fanout) PublishStep(evs []chat.Event) {
	if len(evs) == 0 {
		return
	}
	its := make([]*Item, len(evs))
	for i, ev := range evs {
		its[i] = &Item{Thread: ev.Thread, Seq: ev.Seq, Event: ev, Frame: ev.Frame()}
	}
	thread := evs[0].Thread
	var dropped int
	h.mu.Lock()
	for s := range h.byThread[thread] {
		if !s.push(its...) {
			h.removeLocked(s, ReasonSlow)
			dropped++
		}
	}
	for w := range h.watchers {
		if w.wants(evs) {
			w.mark(thread)
		}
	}
	tap := h.tap
	h.mu.Unlock()
	if tap != nil {
		for _, it := range its {
			tap(*it)
		}
	}
	for range dropped {
		if h.onDrop != nil {
			h.onDrop(ReasonSlow)
		}
	}
}

// Draft is provisional text to publish (chat.AgentDraft events, no seq).
type Draft struct {
	ID    int64
	After int64      // the thread's event it belongs right after
	Whole chat.Event // the whole text
	// Append, when the text only adds to the draft Extends (the one
	// published before), is what it adds; nil otherwise.
	Append  *chat.Event
	Extends int64
}

// PublishDraft sends provisional text. It is no log entry: a subscriber whose
// backlog is full just misses it (a later draft, or the final words, follow;
// its view's next draft is then whole), nothing watches it, and it does not
// leave this machine (no tap).
func (h *Fanout) PublishDraft(d Draft) {
	it := &Item{Thread: d.Whole.Thread, Event: d.Whole, Frame: d.Whole.Frame(), Draft: true, After: d.After, DraftID: d.ID}
	if a := d.Append; a != nil {
		it.Append = &Item{Thread: a.Thread, Event: *a, Frame: a.Frame(), Draft: true, After: d.After, DraftID: d.ID, Extends: d.Extends}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.byThread[it.Thread] {
		s.push(it)
	}
}

// PublishAside sends events of a thread that are no entry of its log (no
// seq): a message for another machine's thread that failed before it got
// there, kept by this machine (docs/multi-machine.md). Every subscriber
// showing the thread gets them, and every one of route (its sender's), which
// may show no thread while that machine does not answer. A subscriber whose
// backlog is full is dropped, as by PublishStep: it catches up by replay.
func (h *Fanout) PublishAside(route chat.RouteKey, evs ...chat.Event) {
	if len(evs) == 0 {
		return
	}
	its := make([]*Item, len(evs))
	for i, ev := range evs {
		its[i] = &Item{Thread: ev.Thread, Event: ev, Frame: ev.Frame(), Aside: true}
	}
	var dropped int
	h.mu.Lock()
	seen := map[*Sub]bool{}
	for _, subs := range []map[*Sub]struct{}{h.byThread[evs[0].Thread], h.byRoute[route]} {
		for s := range subs {
			if seen[s] {
				continue
			}
			seen[s] = true
			if !s.push(its...) {
				h.removeLocked(s, ReasonSlow)
				dropped++
			}
		}
	}
	h.mu.Unlock()
	for range dropped {
		if h.onDrop != nil {
			h.onDrop(ReasonSlow)
		}
	}
}

// SetTap makes Publish hand every event to f too, after the subscribers, in
// each thread's publish order (a node's link carries them to its cluster's
// hub). f must not block: it runs on the publishing lane. nil removes it.
func (h *Fanout) SetTap(f func(Item)) {
	h.mu.Lock()
	h.tap = f
	h.mu.Unlock()
}

// Attach moves every subscriber of route to thread and tells each of them with a
// Switch item, in order with the events around it.
func (h *Fanout) Attach(route chat.RouteKey, thread chat.ThreadID) { h.tell(route, thread, true) }

// Reshow tells every subscriber of route that shows thread to show it
// again, with a Switch item to the thread it already has: a follower that
// subscribed while the thread could not be read (its machine did not answer,
// docs/multi-machine.md) shows it now; one that shows it already takes no
// notice.
func (h *Fanout) Reshow(route chat.RouteKey, thread chat.ThreadID) { h.tell(route, thread, false) }

// tell pushes a Switch to thread to the subscribers of route that show
// another thread, moving them to it (move), or to those that show thread.
func (h *Fanout) tell(route chat.RouteKey, thread chat.ThreadID, move bool) {
	var dropped int
	h.mu.Lock()
	for s := range h.byRoute[route] {
		if (s.thread == thread) == move {
			continue
		}
		if move {
			remove(h.byThread, s.thread, s)
			s.thread = thread
			add(h.byThread, thread, s)
		}
		if !s.push(&Item{Thread: thread, Switch: true}) {
			h.removeLocked(s, ReasonSlow)
			dropped++
		}
	}
	h.mu.Unlock()
	for range dropped {
		if h.onDrop != nil {
			h.onDrop(ReasonSlow)
		}
	}
}

// CloseAll drops every subscription with a reason (on shutdown).
func (h *Fanout) CloseAll(reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, subs := range h.byRoute {
		for s := range subs {
			h.removeLocked(s, reason)
		}
	}
}

// CloseThread drops every subscription showing thread with a reason (the
// thread was deleted), and tells the watchers it changed.
func (h *Fanout) CloseThread(thread chat.ThreadID, reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.byThread[thread] {
		h.removeLocked(s, reason)
	}
	for w := range h.watchers {
		w.mark(thread)
	}
}

// Count returns the number of live subscriptions.
func (h *Fanout) Count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, subs := range h.byRoute {
		n += len(subs)
	}
	return n
}

func (h *Fanout) removeLocked(s *Sub, reason string) {
	if s.closed {
		return
	}
	s.closed = true
	s.reason = reason
	remove(h.byRoute, s.Route, s)
	if s.thread != "" {
		remove(h.byThread, s.thread, s)
	}
	close(s.done)
	s.qmu.Lock()
	f := s.onDrop
	s.qmu.Unlock()
	if f != nil && reason != "" {
		go f(reason)
	}
}

func add[K comparable](m map[K]map[*Sub]struct{}, k K, s *Sub) {
	set := m[k]
	if set == nil {
		set = map[*Sub]struct{}{}
		m[k] = set
	}
	set[s] = struct{}{}
}

func remove[K comparable](m map[K]map[*Sub]struct{}, k K, s *Sub) {
	set := m[k]
	delete(set, s)
	if len(set) == 0 {
		delete(m, k)
	}
}
