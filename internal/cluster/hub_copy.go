package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/parleyhq/parley/internal/chat"
)

// The hub's copy of each node's recent events (docs/multi-machine.md, "A
// node away"). The relay writes every event it accepts from a node, live or
// read back to fill a gap, into the hub's own stream PARLEY_COPY_<node>
// (subject parley.copy.<node>.<thread>, the node's seq and the event's type
// and time in headers), bounded by age and bytes ([cluster] copy_age and
// copy_bytes: the oldest go first). While the node is away, its threads are
// read from there. Nodes have no right on these subjects (nodePermissions),
// and no stream captures what a node publishes: the hub writes the copy.
//
// Each thread's part of the copy is one run of seqs with no hole: an event
// after a hole (a write that failed, a gap the relay could not fill) starts
// the thread's copy again at it. So a reader finds events by seq, and a
// replay from the copy is the node's log from some seq on.

// CopyStream is the name of the hub's copy of node's events.
func CopyStream(node string) string { return "PARLEY_COPY_" + node }

// CopySubject is where the hub keeps node's thread's events in its copy.
func CopySubject(node string, thread chat.ThreadID) string {
	return copyPrefix(node) + "." + string(thread)
}

func copyPrefix(node string) string { return "parley.copy." + node }

// The copy's defaults ([cluster] copy_bytes and copy_age).
const (
	DefaultCopyBytes = 32 << 20
	DefaultCopyAge   = 7 * 24 * time.Hour
)

// copyTimeout bounds one write to the copy: the relay waits for it before
// it shows the event, so a reader at the hub never sees what the copy lacks.
const copyTimeout = 5 * time.Second

// copyRetry is how long a node's copy that could not be made waits before
// it is tried again (each of the node's events meanwhile goes uncopied).
const copyRetry = time.Minute

// hubCopy writes and reads the copy. Writes (the relay's goroutine), a
// thread's removal and a node's revocation take mu, held across their
// JetStream calls; reads take nothing (they read the streams). Lock order
// (docs/locks.md): Hub.members, then mu, then Hub.book, then Hub.mu.
type hubCopy struct {
	h *Hub

	mu      sync.Mutex
	streams map[string]jetstream.Stream // each node's copy, made or found in this run
	retry   map[string]time.Time        // a node whose copy could not be made: not before
	last    map[chat.ThreadID]int64     // each thread's newest seq in the copy, once known
}

func newHubCopy(h *Hub) *hubCopy {
	return &hubCopy{h: h, streams: map[string]jetstream.Stream{}, retry: map[string]time.Time{},
		last: map[chat.ThreadID]int64{}}
}

// put adds ev (its Thread the remote id) to node's copy, unless the copy
// holds it already. A failure is logged: the copy is the hub's help while a
// node is away, never a reason to hold the node's events.
func (c *hubCopy) put(node string, ev chat.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), copyTimeout)
	defer cancel()
	s := c.stream(ctx, node)
	if s == nil {
		return
	}
	_, th, _ := SplitRemoteID(ev.Thread)
	subj := CopySubject(node, th)
	last, known := c.last[ev.Thread]
	if !known {
		var err error
		if last, err = lastInCopy(ctx, s, subj); err != nil {
			c.h.log.Warn("cluster: read the hub's copy of a thread", "thread", ev.Thread, "err", err)
			return
		}
	}
	switch {
	case ev.Seq <= last:
		c.last[ev.Thread] = last
		return // held already
	case last > 0 && ev.Seq > last+1:
		// A hole: the copy starts again at ev, so it stays a run.
		if err := s.Purge(ctx, jetstream.WithPurgeSubject(subj)); err != nil {
			c.h.log.Warn("cluster: restart the hub's copy of a thread", "thread", ev.Thread, "err", err)
			delete(c.last, ev.Thread)
			return
		}
	}
	m := nats.NewMsg(subj)
	m.Header.Set(hdrType, ev.Type)
	m.Header.Set(hdrSeq, strconv.FormatInt(ev.Seq, 10))
	m.Header.Set(hdrTS, ev.TS.UTC().Format(time.RFC3339Nano))
	m.Header.Set(nats.MsgIdHdr, fmt.Sprintf("%s.%s.%d", node, th, ev.Seq)) // a repeat is dropped
	m.Data = ev.Payload
	if _, err := c.h.js.PublishMsg(ctx, m); err != nil {
		c.h.log.Warn("cluster: write an event into the hub's copy", "thread", ev.Thread, "seq", ev.Seq, "err", err)
		delete(c.last, ev.Thread) // read again from the stream at the next event
		return
	}
	c.last[ev.Thread] = ev.Seq
}

// stream is node's copy, made at its first event in this run (with this
// run's bounds); nil when it cannot be: the node is not joined (revoked
// meanwhile), or no room at the hub. c.mu is held: a revocation after the
// check below drops the copy only once it is made (hubCopy.drop waits for
// c.mu).
func (c *hubCopy) stream(ctx context.Context, node string) jetstream.Stream {
	if s, ok := c.streams[node]; ok {
		return s
	}
	if time.Now().Before(c.retry[node]) {
		return nil
	}
	h := c.h
	h.mu.Lock()
	_, joined := h.reg.find(node)
	h.mu.Unlock()
	if !joined {
		return nil
	}
	h.book.Lock()
	defer h.book.Unlock()
	bound, err := h.copyBound(ctx, node)
	var s jetstream.Stream
	if err == nil {
		s, err = h.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name: CopyStream(node), Description: "the hub's copy of node " + node + "'s recent thread events",
			Subjects: []string{copyPrefix(node) + ".*"}, Retention: jetstream.LimitsPolicy,
			Storage: jetstream.FileStorage, Duplicates: 10 * time.Minute,
			MaxBytes: bound, MaxAge: h.opt.CopyAge, Discard: jetstream.DiscardOld,
		})
	}
	if err != nil {
		h.log.Warn(fmt.Sprintf("cluster: the hub keeps no copy of node %s's events (its threads cannot be read while it is away); "+
			"trying again in %v: %v", node, copyRetry, err), "node", node)
		c.retry[node] = time.Now().Add(copyRetry)
		return nil
	}
	delete(c.retry, node)
	c.streams[node] = s
	return s
}

// forget removes a thread deleted on its node from the copy.
func (c *hubCopy) forget(ctx context.Context, id chat.ThreadID) error {
	node, th, ok := SplitRemoteID(id)
	if !ok {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.last, id)
	s, err := c.h.js.Stream(ctx, CopyStream(node))
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return s.Purge(ctx, jetstream.WithPurgeSubject(CopySubject(node, th)))
}

// drop deletes a revoked node's copy.
func (c *hubCopy) drop(ctx context.Context, node string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.streams, node)
	delete(c.retry, node)
	for id := range c.last {
		if NodeOf(id) == node {
			delete(c.last, id)
		}
	}
	if err := c.h.js.DeleteStream(ctx, CopyStream(node)); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return err
	}
	return nil
}

// lastSeq is the newest seq of thread id in the copy (0: none).
func (c *hubCopy) lastSeq(ctx context.Context, id chat.ThreadID) (int64, error) {
	node, th, ok := SplitRemoteID(id)
	if !ok {
		return 0, chat.ErrNotFound
	}
	s, err := c.h.js.Stream(ctx, CopyStream(node))
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return lastInCopy(ctx, s, CopySubject(node, th))
}

func lastInCopy(ctx context.Context, s jetstream.Stream, subj string) (int64, error) {
	m, err := s.GetLastMsgForSubject(ctx, subj)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(m.Header.Get(hdrSeq), 10, 64)
}

// events reads up to limit of thread id's events after since from the
// copy, in seq order: the copy's oldest first when it starts after since.
func (c *hubCopy) events(ctx context.Context, id chat.ThreadID, since int64, limit int) ([]chat.Event, error) {
	node, th, ok := SplitRemoteID(id)
	if !ok {
		return nil, chat.ErrNotFound
	}
	s, err := c.h.js.Stream(ctx, CopyStream(node))
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	subj := CopySubject(node, th)
	// next is the thread's first message at or after stream seq x.
	next := func(x uint64) (*jetstream.RawStreamMsg, int64, error) {
		m, err := s.GetMsg(ctx, x, jetstream.WithGetMsgSubject(subj))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil, 0, nil
		}
		if err != nil {
			return nil, 0, err
		}
		seq, err := strconv.ParseInt(m.Header.Get(hdrSeq), 10, 64)
		return m, seq, err
	}
	// The thread's seqs grow with the stream's: find the first past since
	// by halves, so a replay near the end does not read the whole copy.
	st := s.CachedInfo().State
	lo, hi := max(st.FirstSeq, 1), st.LastSeq+1
	for lo < hi {
		mid := lo + (hi-lo)/2
		m, seq, err := next(mid)
		switch {
		case err != nil:
			return nil, err
		case m == nil || seq > since:
			hi = mid
		default:
			lo = m.Sequence + 1
		}
	}
	var out []chat.Event
	for x := lo; len(out) < limit; {
		m, seq, err := next(x)
		if err != nil {
			return nil, err
		}
		if m == nil {
			break
		}
		ts, err := time.Parse(time.RFC3339Nano, m.Header.Get(hdrTS))
		if err != nil {
			return nil, fmt.Errorf("cluster: the hub's copy of %s: an event without a time", id)
		}
		if seq > since {
			out = append(out, chat.Event{Type: m.Header.Get(hdrType), Thread: id, Seq: seq, TS: ts, Payload: m.Data})
		}
		x = m.Sequence + 1
	}
	return out, nil
}

// tail reads thread id's last n events from the copy (a run of seqs: the
// last n are the ones after its last seq less n).
func (c *hubCopy) tail(ctx context.Context, id chat.ThreadID, n int) ([]chat.Event, error) {
	last, err := c.lastSeq(ctx, id)
	if err != nil || last == 0 {
		return nil, err
	}
	return c.events(ctx, id, max(last-int64(n), 0), n)
}

// copyBound is the bound node's copy is made or updated with: copy_bytes
// when the budget has room for it; a copy whose bound would grow past the
// budget keeps its bound, and a new one past it is not made. h.book is held.
func (h *Hub) copyBound(ctx context.Context, node string) (int64, error) {
	bound, had, booked, err := h.bookable(ctx, CopyStream(node), h.opt.CopyBytes)
	switch {
	case err != nil:
		return 0, err
	case bound == 0:
		return 0, fmt.Errorf("%w for its copy: [cluster] copy_bytes (%d MiB) would book past the hub's budget (%d MiB of %d MiB booked); "+
			"lower copy_bytes or input_bytes, or free disk on the hub, and restart it", ErrNoRoom, h.opt.CopyBytes>>20, booked>>20, h.budget>>20)
	case bound == had && had < h.opt.CopyBytes:
		h.log.Warn(fmt.Sprintf("cluster: node %s keeps its copy's bound of %d MiB: [cluster] copy_bytes (%d MiB) would book "+
			"past the hub's budget (%d MiB of %d MiB booked)", node, had>>20, h.opt.CopyBytes>>20, booked>>20, h.budget>>20), "node", node)
	}
	return bound, nil
}

// offline says whether remote thread id's node is offline in the hub's
// directory (it said it stopped, or missed its heartbeats: a laptop closed
// may keep its connection for minutes, and a read would wait out its
// timeout), and since when: the hub's last record of it. A node never heard
// from is not: it is asked (it may be linking up).
func (h *Hub) offline(ctx context.Context, id chat.ThreadID) (since time.Time, off bool) {
	st, ok := h.nodeStatus(ctx, NodeOf(id))
	return st.LastSeen, ok && !st.Online && !st.LastSeen.IsZero()
}

// lastHeard is when the hub last heard from node (zero: never).
func (h *Hub) lastHeard(ctx context.Context, node string) time.Time {
	st, _ := h.nodeStatus(ctx, node)
	return st.LastSeen
}

func (h *Hub) nodeStatus(ctx context.Context, node string) (NodeStatus, bool) {
	nodes, err := h.Nodes(ctx)
	if err != nil {
		return NodeStatus{}, false
	}
	for _, n := range nodes {
		if n.Name == node {
			return n, true
		}
	}
	return NodeStatus{}, false
}

// joined says whether node is joined to the hub.
func (h *Hub) joined(node string) (member, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.reg.find(node)
}
