package cluster

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/parleyhq/parley/internal/chat"
)

// Relay carries the nodes' live events into publish (the hub's local hub),
// each remote thread's in seq order with no gap: an event after a gap (one
// lost while a link was down) is preceded by the missing ones, read from the
// node; one already relayed is dropped. Each is written into the hub's copy
// (hub_copy.go) before it is published, and a thread's first event since the
// hub started fills the gap after the copy's newest (or, with none copied,
// its summary's last seq): a reader who was shown the copy while the node
// was away misses nothing. Each node's events are relayed by a goroutine of
// their own, so a node slow to answer a backfill holds only its own. It
// runs until stop, which waits for those goroutines.
func (h *Hub) Relay(publish func(chat.Event)) (stop func(), err error) {
	ctx, cancel := context.WithCancel(context.Background())
	r := &relay{h: h, publish: publish, ctx: ctx, nodes: map[string]*nodeRelay{}}
	sub, err := h.nc.Subscribe("parley.from.*.t.*.ev", r.handle)
	if err != nil {
		cancel()
		return nil, err
	}
	return func() {
		_ = sub.Unsubscribe()
		// A handle already running may still start a node's goroutine:
		// stopped, under mu, makes it not (Add never races Wait).
		r.mu.Lock()
		r.stopped = true
		r.mu.Unlock()
		cancel()
		r.wg.Wait()
	}, h.nc.Flush()
}

// relayQueue bounds a node's events waiting for its relay goroutine (one
// slow to answer a backfill). One past it is dropped, as if the link lost
// it: the node's next event after the gap fills it from the node.
const relayQueue = 4096

type relay struct {
	h       *Hub
	publish func(chat.Event)
	ctx     context.Context // ended by stop
	wg      sync.WaitGroup
	// mu guards nodes and stopped (a leaf). NATS calls handle in order on
	// the subscription's goroutine; stop comes from another.
	mu      sync.Mutex
	nodes   map[string]*nodeRelay // each node's relay
	stopped bool
}

// nodeRelay relays one node's events, in the order they came, on its own
// goroutine.
type nodeRelay struct {
	r    *relay
	node string
	wake chan struct{} // 1: q has events
	mu   sync.Mutex    // guards q and dropping; a leaf
	q    []*nats.Msg
	// dropping: q was full and an event dropped since run last took it
	// (said once in the log).
	dropping bool
	// last is each of the node's threads' newest seq relayed (one entry per
	// thread seen since the hub started). Only run touches it.
	last map[chat.ThreadID]int64
}

// handle hands m to its node's relay, started at the node's first event.
func (r *relay) handle(m *nats.Msg) {
	node := strings.Split(m.Subject, ".")[2]
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return
	}
	n := r.nodes[node]
	if n == nil {
		n = &nodeRelay{r: r, node: node, wake: make(chan struct{}, 1), last: map[chat.ThreadID]int64{}}
		r.nodes[node] = n
		r.wg.Add(1)
		go n.run()
	}
	r.mu.Unlock()
	n.mu.Lock()
	full := len(n.q) >= relayQueue
	say := full && !n.dropping
	if full {
		n.dropping = true
	} else {
		n.q = append(n.q, m)
	}
	n.mu.Unlock()
	if say {
		r.h.log.Warn(fmt.Sprintf("cluster: %d of machine %s's events wait for the hub to relay them; "+
			"newer ones are dropped and read back from it after", relayQueue, node), "node", node)
	}
	if full {
		return
	}
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

func (n *nodeRelay) run() {
	defer n.r.wg.Done()
	for {
		select {
		case <-n.r.ctx.Done():
			return
		case <-n.wake:
		}
		n.mu.Lock()
		q := n.q
		n.q, n.dropping = nil, false
		n.mu.Unlock()
		for _, m := range q {
			if n.r.ctx.Err() != nil {
				return
			}
			n.relay(m)
		}
	}
}

func (n *nodeRelay) relay(m *nats.Msg) {
	r, node := n.r, n.node
	ev, err := EventFromMsg(m)
	if err != nil {
		r.h.log.Warn("cluster: a node's event is malformed", "node", node, "err", err)
		return
	}
	id := RemoteID(node, ev.Thread)
	ev.Thread = id
	last, seen := n.last[id]
	if !seen {
		// What the hub may have shown of it before: one already shown goes
		// again (a follower drops it by seq), a gap after it is filled.
		last = r.shownBefore(id)
	}
	switch {
	case seen && ev.Seq <= last:
		return // relayed already (a backfill took it)
	case ev.Seq > last+1 && last > 0:
		ctx, cancel := context.WithTimeout(r.ctx, sourceTimeout)
		missing, err := r.h.Source().nodeEvents(ctx, id, last, int(ev.Seq-last-1))
		cancel()
		if err != nil {
			// The follower's own replay from the node covers what a
			// viewer missed; the relay says so and goes on.
			r.h.log.Warn("cluster: backfill a remote thread's events", "thread", id, "after", last, "err", err)
		}
		for _, e := range missing {
			if e.Seq > last && e.Seq < ev.Seq {
				r.accept(node, e)
			}
		}
	}
	n.last[id] = ev.Seq
	r.accept(node, ev)
}

// accept copies ev, then shows it.
func (r *relay) accept(node string, ev chat.Event) {
	r.h.copy.put(node, ev)
	r.publish(ev)
}

// shownBefore is the newest seq of remote thread id the hub may have shown
// before this run relayed any of it: its copy's newest, or its summary's
// last seq when the copy holds none (0: nothing known).
func (r *relay) shownBefore(id chat.ThreadID) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), copyTimeout)
	defer cancel()
	last, err := r.h.copy.lastSeq(ctx, id)
	if err != nil {
		r.h.log.Warn("cluster: read the hub's copy of a thread", "thread", id, "err", err)
	}
	if last > 0 {
		return last
	}
	node, th, _ := SplitRemoteID(id)
	if sum, ok := r.h.summaries.get(ThreadKey(node, th)); ok {
		return sum.val.Thread.LastSeq
	}
	return 0
}
