package cluster

import (
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// mirror is the hub's in-memory copy of one directory bucket (the nodes'
// records, or their thread summaries), so that every socket connect,
// /api/agents, /api/nodes and thread list is answered from memory, without a
// NATS read per node or a key walk per call. One goroutine (run) owns it: it
// watches the bucket and is the only writer of vals; readers take mu for
// reading. mu is a leaf: nothing is locked under it.
//
// The hub answers a node's record only once its mirror holds it (await), and
// a revoke returns only once the purges are applied (sync): what the hub
// wrote, it lists.
type mirror[T any] struct {
	kv     jetstream.KeyValue
	decode func(key string, value []byte) (T, error)
	log    *slog.Logger

	mu      sync.RWMutex
	vals    map[string]held[T]
	rev     uint64        // the bucket's last revision applied
	ready   bool          // the bucket's values at the start are in
	changed chan struct{} // closed, and replaced, at each change
	watches []*keyWatch   // readers' indexes of the changed keys (watch)

	stop context.CancelFunc
	done chan struct{}
}

// held is one key's value, when the hub wrote it (the hub's clock), the
// bucket's revision of it, and the digest of its bytes (same: an unchanged
// value the hub need not write again).
type held[T any] struct {
	val T
	at  time.Time
	rev uint64
	sum [sha256.Size]byte
}

// startMirror loads the bucket and follows it until close (then close the
// connection: the watch's subscription ends with it).
func startMirror[T any](ctx context.Context, kv jetstream.KeyValue, log *slog.Logger,
	decode func(key string, value []byte) (T, error)) (*mirror[T], error) {
	wctx, stop := context.WithCancel(context.Background())
	m := &mirror[T]{kv: kv, decode: decode, log: log, vals: map[string]held[T]{},
		changed: make(chan struct{}), stop: stop, done: make(chan struct{})}
	w, err := kv.WatchAll(wctx)
	if err != nil {
		stop()
		return nil, err
	}
	go m.run(wctx, w)
	if err := m.await(ctx, 0); err != nil {
		m.close()
		return nil, err
	}
	return m, nil
}

func (m *mirror[T]) close() {
	m.stop()
	<-m.done
}

// run follows the bucket; a watch that ends (its subscription closed) is
// made again, its values replacing the copy whole.
func (m *mirror[T]) run(ctx context.Context, w jetstream.KeyWatcher) {
	defer close(m.done)
	for {
		m.follow(ctx, w)
		for {
			if ctx.Err() != nil {
				return
			}
			m.log.Warn("cluster: the directory's watch ended; watching again", "bucket", m.kv.Bucket())
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			var err error
			if w, err = m.kv.WatchAll(ctx); err == nil {
				break
			}
		}
	}
}

// follow applies w's updates until it ends or ctx is done. It does not stop w
// then: stopping asks JetStream, which may be what is down, for seconds; the
// hub's connection, closed right after the mirrors, ends the watch.
func (m *mirror[T]) follow(ctx context.Context, w jetstream.KeyWatcher) {
	// The values at the watch's start, swapped in whole at their end.
	var next map[string]held[T]
	var rev uint64
	loading := true
	next = map[string]held[T]{}
	for {
		var e jetstream.KeyValueEntry
		var ok bool
		select {
		case <-ctx.Done():
			return
		case e, ok = <-w.Updates():
			if !ok {
				return
			}
		}
		if e == nil { // the end of the values at the start
			m.mu.Lock()
			m.vals, m.rev, m.ready, loading = next, max(m.rev, rev), true, false
			m.changedLocked()
			ws := m.watches
			m.mu.Unlock()
			for _, w := range ws {
				w.markAll()
			}
			continue
		}
		if loading {
			m.apply(next, e)
			rev = max(rev, e.Revision())
			continue
		}
		m.mu.Lock()
		m.apply(m.vals, e)
		m.rev = max(m.rev, e.Revision())
		m.changedLocked()
		ws := m.watches
		m.mu.Unlock()
		// Marked once the copy holds the change: a reader that takes the
		// key reads the new value.
		for _, w := range ws {
			w.mark(e.Key())
		}
	}
}

func (m *mirror[T]) apply(vals map[string]held[T], e jetstream.KeyValueEntry) {
	if e.Operation() != jetstream.KeyValuePut {
		delete(vals, e.Key())
		return
	}
	v, err := m.decode(e.Key(), e.Value())
	if err != nil {
		// The hub checks each value before writing it; one unreadable (an
		// older hub's) says nothing and must not hide the others.
		m.log.Warn("cluster: a directory entry is unreadable", "bucket", m.kv.Bucket(), "key", e.Key(), "err", err)
		delete(vals, e.Key())
		return
	}
	vals[e.Key()] = held[T]{val: v, at: e.Created(), rev: e.Revision(), sum: sha256.Sum256(e.Value())}
}

func (m *mirror[T]) changedLocked() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// await waits until the copy holds the bucket's revision rev.
func (m *mirror[T]) await(ctx context.Context, rev uint64) error {
	for {
		m.mu.RLock()
		ok, ch := m.ready && m.rev >= rev, m.changed
		m.mu.RUnlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-m.done:
			return errors.New("cluster: the directory is closed")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// sync waits until the copy holds every change written to the bucket before it.
func (m *mirror[T]) sync(ctx context.Context) error {
	st, err := m.kv.Status(ctx)
	if err != nil {
		return err
	}
	bs, ok := st.(*jetstream.KeyValueBucketStatus)
	if !ok {
		return errors.New("cluster: a bucket status without its stream")
	}
	return m.await(ctx, bs.StreamInfo().State.LastSeq)
}

// revision is the bucket's last revision the copy holds.
func (m *mirror[T]) revision() uint64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.rev
}

// get is key's value, if any.
func (m *mirror[T]) get(key string) (held[T], bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	v, ok := m.vals[key]
	return v, ok
}

// each calls f with every key's value, under the read lock: f must not block.
func (m *mirror[T]) each(f func(key string, v held[T])) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for k, v := range m.vals {
		f(k, v)
	}
}

// watch starts an index of the keys that change from now on (keyWatch).
func (m *mirror[T]) watch() *keyWatch {
	w := newKeyWatch()
	m.mu.Lock()
	m.watches = append(m.watches, w)
	m.mu.Unlock()
	return w
}

// touchAll tells every watch that any key may have changed: what the copy
// holds did not, but what it means did (a machine joined or left).
func (m *mirror[T]) touchAll() {
	m.mu.RLock()
	ws := m.watches
	m.mu.RUnlock()
	for _, w := range ws {
		w.markAll()
	}
}

// same says whether key holds exactly the bytes b, as far as the copy knows.
func (m *mirror[T]) same(key string, b []byte) bool {
	v, ok := m.get(key)
	return ok && v.sum == sha256.Sum256(b)
}

// changes is closed at the copy's next change.
func (m *mirror[T]) changes() <-chan struct{} {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.changed
}
