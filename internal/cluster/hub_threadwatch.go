package cluster

import (
	"slices"
	"strings"
	"sync"

	"github.com/parleyhq/parley/internal/chat"
)

// keyWatch is one reader's index of a mirror's changes: the keys changed
// since its last take, so a reader of thousands of thread summaries looks
// at the few that changed instead of walking them all at each change. It
// starts (and after the bucket is loaded again) with all set: every key may
// have changed. mu is a leaf.
type keyWatch struct {
	mu    sync.Mutex
	keys  map[string]struct{}
	all   bool
	ready chan struct{} // holds one wake-up while something is to take
}

func newKeyWatch() *keyWatch {
	w := &keyWatch{keys: map[string]struct{}{}, all: true, ready: make(chan struct{}, 1)}
	w.ready <- struct{}{}
	return w
}

func (w *keyWatch) mark(key string) {
	w.mu.Lock()
	if !w.all {
		w.keys[key] = struct{}{}
	}
	w.mu.Unlock()
	w.wake()
}

func (w *keyWatch) markAll() {
	w.mu.Lock()
	w.all = true
	clear(w.keys)
	w.mu.Unlock()
	w.wake()
}

func (w *keyWatch) wake() {
	select {
	case w.ready <- struct{}{}:
	default:
	}
}

// take is the keys changed since the last take, sorted, or all.
func (w *keyWatch) take() (keys []string, all bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.all {
		w.all = false
		return nil, true
	}
	for k := range w.keys {
		keys = append(keys, k)
	}
	clear(w.keys)
	slices.Sort(keys)
	return keys, false
}

// ThreadWatch tells which nodes' threads the hub's summaries of changed (a
// summary written, a thread deleted, a machine revoked or joined), for a
// reader that keeps its own view of them (the push service): it reads only
// those with Thread, or all of them with Threads when Take says all.
type ThreadWatch struct{ w *keyWatch }

// WatchThreads starts a watch; its first Take says all.
func (h *Hub) WatchThreads() *ThreadWatch { return &ThreadWatch{h.summaries.watch()} }

// Ready has a value when Take has something to tell.
func (t *ThreadWatch) Ready() <-chan struct{} { return t.w.ready }

// Take is the remote ids of the threads changed since the last Take, or
// all: any may have.
func (t *ThreadWatch) Take() (ids []chat.ThreadID, all bool) {
	keys, all := t.w.take()
	for _, k := range keys {
		if node, th, ok := strings.Cut(k, "."); ok {
			ids = append(ids, RemoteID(node, chat.ThreadID(th)))
		}
	}
	return ids, all
}

// Thread is one node's thread as Threads lists it (remote id), from memory;
// false when it is not listed (deleted, never told, or its machine is not
// joined).
func (h *Hub) Thread(id chat.ThreadID) (RemoteThread, bool) {
	node, th, ok := SplitRemoteID(id)
	if !ok {
		return RemoteThread{}, false
	}
	v, ok := h.summaries.get(ThreadKey(node, th))
	if !ok {
		return RemoteThread{}, false
	}
	h.mu.Lock()
	_, joined := h.reg.find(node)
	h.mu.Unlock()
	return v.val, joined
}
