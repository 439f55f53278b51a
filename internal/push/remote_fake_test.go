package push

import (
	"reflect"
	"strings"
	"sync"

	"github.com/parleyhq/parley/internal/chat"
)

// TestRemote is other machines' summaries as the hub holds them: a Remote
// whose Take names the threads each Set changed, as the hub's watch does
// (a summary told again unchanged is not named), and says all to a service
// started anew (Restart).
type TestRemote struct {
	mu      sync.Mutex
	ths     []RemoteThread
	changed map[chat.ThreadID]bool
	all     bool
	ready   chan struct{}
	taken   int // threads handed out by Thread and Threads
}

func NewTestRemote(ths ...RemoteThread) *TestRemote {
	r := &TestRemote{ths: ths, changed: map[chat.ThreadID]bool{}, ready: make(chan struct{}, 1)}
	r.Restart()
	return r
}

func (r *TestRemote) Owns(id chat.ThreadID) bool { return strings.Contains(string(id), "@") }
func (r *TestRemote) Ready() <-chan struct{}     { return r.ready }

func (r *TestRemote) Take() ([]chat.ThreadID, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.all {
		r.all = false
		clear(r.changed)
		return nil, true
	}
	var ids []chat.ThreadID
	for id := range r.changed {
		ids = append(ids, id)
	}
	clear(r.changed)
	return ids, false
}

func (r *TestRemote) Thread(id chat.ThreadID) (RemoteThread, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rt := range r.ths {
		if rt.Thread.ID == id {
			r.taken++
			return rt, true
		}
	}
	return RemoteThread{}, false
}

func (r *TestRemote) Threads() []RemoteThread {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.taken += len(r.ths)
	return append([]RemoteThread(nil), r.ths...)
}

// Set is the machines telling their summaries (again, at a reconnect).
func (r *TestRemote) Set(ths ...RemoteThread) {
	r.mu.Lock()
	was := map[chat.ThreadID]RemoteThread{}
	for _, rt := range r.ths {
		was[rt.Thread.ID] = rt
	}
	for _, rt := range ths {
		if old, ok := was[rt.Thread.ID]; !ok || !reflect.DeepEqual(old, rt) {
			r.changed[rt.Thread.ID] = true
		}
		delete(was, rt.Thread.ID)
	}
	for id := range was { // gone
		r.changed[id] = true
	}
	r.ths = ths
	r.mu.Unlock()
	r.wake()
}

// Restart makes the next Take say all: a service started anew.
func (r *TestRemote) Restart() {
	r.mu.Lock()
	r.all = true
	r.mu.Unlock()
	r.wake()
}

// Taken counts the threads read so far, one by one or all at once.
func (r *TestRemote) Taken() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.taken
}

func (r *TestRemote) wake() {
	select {
	case r.ready <- struct{}{}:
	default:
	}
}
