package cluster

import (
	"context"
	"slices"
	"sync"
	"time"
)

// onlineWatch tells the hub's dashboards when a machine comes online or goes
// offline (MachinesChanged), so their agents' status is not a poll behind. One
// goroutine (run) recomputes the machines' states at each directory record
// and at the next heartbeat deadline; mu (a leaf) guards only the channel it
// closes at a change.
type onlineWatch struct {
	h *Hub

	mu      sync.Mutex
	changed chan struct{}

	stop context.CancelFunc
	done chan struct{}
}

func startOnlineWatch(h *Hub) *onlineWatch {
	ctx, stop := context.WithCancel(context.Background())
	w := &onlineWatch{h: h, changed: make(chan struct{}), stop: stop, done: make(chan struct{})}
	go w.run(ctx)
	return w
}

func (w *onlineWatch) close() {
	w.stop()
	<-w.done
}

// MachinesChanged is closed when a joined machine next comes online, goes
// offline or leaves (a machine joining shows with its first record), or its
// link comes up again while it still looked online (restarted or relinked
// within three heartbeats); ask again for the change after it.
func (h *Hub) MachinesChanged() <-chan struct{} {
	h.online.mu.Lock()
	defer h.online.mu.Unlock()
	return h.online.changed
}

func (w *onlineWatch) run(ctx context.Context) {
	defer close(w.done)
	var last []string // each machine: +name@link-up time online, -name offline
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		records := w.h.records.changes() // before reading: a change after it wakes us
		nodes, _ := w.h.Nodes(ctx)
		now := time.Now()
		state := []string{}
		next := time.Hour
		for _, n := range nodes {
			if n.Online {
				// With its link-up time: a machine restarted (or relinked)
				// before the hub saw it go is a change too, as what it can
				// answer is new (a route's thread it could not read).
				state = append(state, "+"+n.Name+"@"+n.Since.String())
				if d := n.until.Sub(now); d < next {
					next = max(d, time.Millisecond)
				}
			} else {
				state = append(state, "-"+n.Name)
			}
		}
		if last != nil && !slices.Equal(state, last) {
			w.mu.Lock()
			close(w.changed)
			w.changed = make(chan struct{})
			w.mu.Unlock()
		}
		last = state
		timer.Reset(next)
		select {
		case <-ctx.Done():
			return
		case <-records:
		case <-timer.C:
		}
	}
}
