package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Store keeps the trail's rows (store/sqlite).
type Store interface {
	AuditHead(ctx context.Context) (Head, error)
	// AppendAudit adds sealed entries in one transaction, after deleting
	// every entry up to pruneThrough when it is not 0.
	AppendAudit(ctx context.Context, es []Entry, pruneThrough int64) error
	// AuditLastBefore is the newest entry older than t.
	AuditLastBefore(ctx context.Context, t time.Time) (Entry, bool, error)
}

// Filter narrows a listing.
type Filter struct {
	Since  time.Time
	Thread string
	Device string // a device id: entries it is the actor of
	Kind   string // only entries of this kind
	After  int64  // only entries after this seq
	Before int64  // only entries before this seq (paging back, newest first)
	Limit  int    // the newest Limit entries; 0 is all
}

// batchMax is the most entries one commit writes.
const batchMax = 256

// Recorder owns the chain: one goroutine seals entries in the order they
// were recorded and writes them in batches, off the paths they record (a
// message's send path only hands the entry over).
type Recorder struct {
	st   Store
	keep time.Duration
	now  func() time.Time
	log  *slog.Logger

	in        chan item
	done      chan struct{}
	closeOnce sync.Once
	head      Head // the goroutine's alone
}

type item struct {
	e     Entry
	flush chan struct{} // when set, no entry: closed once everything before it is written
	prune bool
}

// Options configure a Recorder.
type Options struct {
	// Keep is how long entries are kept ([audit] keep); 0 keeps them all.
	Keep   time.Duration
	Now    func() time.Time
	Logger *slog.Logger
}

// Start reads the trail's head and starts the writer.
func Start(ctx context.Context, st Store, opt Options) (*Recorder, error) {
	h, err := st.AuditHead(ctx)
	if err != nil {
		return nil, err
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Recorder{st: st, keep: opt.Keep, now: opt.Now, log: opt.Logger,
		in: make(chan item, 4096), done: make(chan struct{}), head: h}
	go r.run()
	return r, nil
}

// Record adds an entry (its seq, hashes and, when zero, its time are set
// here). It only hands the entry to the writer.
func (r *Recorder) Record(e Entry) {
	if r == nil {
		return
	}
	if e.TS.IsZero() {
		e.TS = r.now()
	}
	r.in <- item{e: e}
}

// Flush waits until every entry recorded before it is written.
func (r *Recorder) Flush(ctx context.Context) error {
	done := make(chan struct{})
	select {
	case r.in <- item{flush: done}:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Prune removes the entries older than Keep now, leaving a checkpoint (also
// done by the daemon's retention sweep), and waits until it is done.
func (r *Recorder) Prune(ctx context.Context) error {
	done := make(chan struct{})
	select {
	case r.in <- item{prune: true, flush: done}:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close writes what is recorded and ends the writer; Record must not be
// called after it.
func (r *Recorder) Close() {
	r.closeOnce.Do(func() { close(r.in) })
	<-r.done
}

func (r *Recorder) run() {
	defer close(r.done)
	var batch []Entry
	var waiters []chan struct{}
	for it := range r.in {
		batch, waiters = r.take(it, batch[:0], waiters[:0])
		// Whatever else is waiting joins this commit.
	more:
		for len(batch) < batchMax {
			select {
			case it, ok := <-r.in:
				if !ok {
					break more
				}
				batch, waiters = r.take(it, batch, waiters)
			default:
				break more
			}
		}
		r.write(batch, 0)
		for _, w := range waiters {
			close(w)
		}
	}
}

// take seals an item's entry onto the batch, or runs its prune.
func (r *Recorder) take(it item, batch []Entry, waiters []chan struct{}) ([]Entry, []chan struct{}) {
	switch {
	case it.prune:
		r.write(batch, 0)
		batch = batch[:0]
		r.prune()
	case it.flush == nil:
		batch = append(batch, r.seal(it.e))
	}
	if it.flush != nil {
		waiters = append(waiters, it.flush)
	}
	return batch, waiters
}

func (r *Recorder) seal(e Entry) Entry {
	e.Seq = r.head.Seq + 1
	e.Seal(r.head.Hash)
	r.head = Head{Seq: e.Seq, Hash: e.Hash}
	return e
}

// write commits a batch. A batch the store refuses is logged and lost, and
// the head goes back to what the store holds, so the chain stays whole.
func (r *Recorder) write(batch []Entry, pruneThrough int64) bool {
	if len(batch) == 0 {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.st.AppendAudit(ctx, batch, pruneThrough); err != nil {
		r.log.Error("audit: entries not written", "entries", len(batch), "first", batch[0].Kind, "err", err)
		if h, herr := r.st.AuditHead(ctx); herr == nil {
			r.head = h
		}
		return false
	}
	return true
}

func (r *Recorder) prune() {
	if r.keep <= 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	last, ok, err := r.st.AuditLastBefore(ctx, r.now().Add(-r.keep))
	if err != nil {
		r.log.Error("audit: prune", "err", err)
		return
	}
	if !ok || last.Kind == KindCheckpoint && last.Seq == r.head.Seq {
		return // nothing older than keep, or only the last checkpoint itself
	}
	d, _ := json.Marshal(Checkpoint{Through: last.Seq, Hash: last.Hash})
	cp := r.seal(Entry{TS: r.now(), Kind: KindCheckpoint, Actor: ActorParley,
		Subject: fmt.Sprintf("entries up to %d pruned (older than %s)", last.Seq, r.keep), Detail: d})
	if r.write([]Entry{cp}, last.Seq) {
		r.log.Info("audit: pruned", "through", last.Seq)
	}
}
