package fanout

import (
	"slices"
	"sync"

	"github.com/parleyhq/parley/internal/chat"
)

// Watcher hears which threads changed (any event published), not what
// changed: a thread list refetches the threads it names. Changes coalesce, so
// a watcher that is slow to look costs one entry per thread, never a backlog.
type Watcher struct {
	ready chan struct{}   // signalled (capacity 1) when threads changed
	types map[string]bool // WatchTypes: the event types it hears of (nil: all); set once

	mu      sync.Mutex // a leaf, after Fanout.mu (docs/locks.md)
	changed map[chat.ThreadID]struct{}
}

// Ready is signalled when threads changed since the last Take.
func (w *Watcher) Ready() <-chan struct{} { return w.ready }

// Take returns the threads changed since the last Take, sorted.
func (w *Watcher) Take() []chat.ThreadID {
	w.mu.Lock()
	defer w.mu.Unlock()
	ids := make([]chat.ThreadID, 0, len(w.changed))
	for id := range w.changed {
		ids = append(ids, id)
	}
	clear(w.changed)
	slices.Sort(ids)
	return ids
}

func (w *Watcher) mark(thread chat.ThreadID) {
	w.mu.Lock()
	w.changed[thread] = struct{}{}
	w.mu.Unlock()
	select {
	case w.ready <- struct{}{}:
	default:
	}
}

// wants says whether a step of events is news to the watcher.
func (w *Watcher) wants(evs []chat.Event) bool {
	if w.types == nil {
		return true
	}
	for _, e := range evs {
		if w.types[e.Type] {
			return true
		}
	}
	return false
}

// Watch registers a watcher of every thread's changes; Unwatch it when done.
func (h *Fanout) Watch() *Watcher { return h.WatchTypes() }

// WatchTypes registers a watcher that hears of a thread only when a step
// holds an event of one of these types (none: every step), or the thread is
// deleted. A consumer that cares about a few events (push: cards and turn
// ends) is then not woken by every streamed chunk.
func (h *Fanout) WatchTypes(types ...string) *Watcher {
	w := &Watcher{ready: make(chan struct{}, 1), changed: map[chat.ThreadID]struct{}{}}
	if len(types) > 0 {
		w.types = map[string]bool{}
		for _, t := range types {
			w.types[t] = true
		}
	}
	h.mu.Lock()
	h.watchers[w] = struct{}{}
	h.mu.Unlock()
	return w
}

// Unwatch removes a watcher.
func (h *Fanout) Unwatch(w *Watcher) {
	h.mu.Lock()
	delete(h.watchers, w)
	h.mu.Unlock()
}

// Watchers returns the number of registered watchers.
func (h *Fanout) Watchers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.watchers)
}
