package cluster

import (
	"context"
	"strings"

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
// was away misses nothing. It runs until stop.
func (h *Hub) Relay(publish func(chat.Event)) (stop func(), err error) {
	r := &relay{h: h, publish: publish, last: map[chat.ThreadID]int64{}}
	sub, err := h.nc.Subscribe("parley.from.*.t.*.ev", r.handle)
	if err != nil {
		return nil, err
	}
	return func() { _ = sub.Unsubscribe() }, h.nc.Flush()
}

type relay struct {
	h       *Hub
	publish func(chat.Event)
	// last is each remote thread's newest seq relayed (one entry per remote
	// thread seen since the hub started). Only the subscription's goroutine
	// touches it: NATS calls handle in order.
	last map[chat.ThreadID]int64
}

func (r *relay) handle(m *nats.Msg) {
	node := strings.Split(m.Subject, ".")[2]
	ev, err := EventFromMsg(m)
	if err != nil {
		r.h.log.Warn("cluster: a node's event is malformed", "node", node, "err", err)
		return
	}
	id := RemoteID(node, ev.Thread)
	ev.Thread = id
	last, seen := r.last[id]
	if !seen {
		// What the hub may have shown of it before: one already shown goes
		// again (a follower drops it by seq), a gap after it is filled.
		last = r.shownBefore(id)
	}
	switch {
	case seen && ev.Seq <= last:
		return // relayed already (a backfill took it)
	case ev.Seq > last+1 && last > 0:
		ctx, cancel := context.WithTimeout(context.Background(), sourceTimeout)
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
	r.last[id] = ev.Seq
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
