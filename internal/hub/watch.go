package hub

import (
	"slices"
	"sync"

	"github.com/parleyhq/parley/internal/chat"
)

// Watcher hears which threads changed (any event published), not what
// changed: a thread list refetches the threads it names. Changes coalesce, so
// a watcher that is slow to look costs one entry per thread, never a backlog.
type Watcher struct {
	ready chan struct{} // signalled (capacity 1) when threads changed

	mu      sync.Mutex // a leaf, after Hub.mu (Hub's lock order)
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

// Watch registers a watcher of every thread's changes; Unwatch it when done.
func (h *Hub) Watch() *Watcher {
	w := &Watcher{ready: make(chan struct{}, 1), changed: map[chat.ThreadID]struct{}{}}
	h.mu.Lock()
	h.watchers[w] = struct{}{}
	h.mu.Unlock()
	return w
}

// Unwatch removes a watcher.
func (h *Hub) Unwatch(w *Watcher) {
	h.mu.Lock()
	delete(h.watchers, w)
	h.mu.Unlock()
}

// Watchers returns the number of registered watchers.
func (h *Hub) Watchers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.watchers)
}
