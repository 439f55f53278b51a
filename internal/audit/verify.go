package audit

import "context"

// Scanner reads every entry in seq order (store/sqlite).
type Scanner interface {
	// ScanAudit calls fn with every entry in seq order; fn must not keep the
	// entry's byte slices, which belong to the row read (its strings are
	// its own).
	ScanAudit(ctx context.Context, fn func(*Entry) error) error
}

// Verify checks a whole trail: the number of entries that match, or a
// *Mismatch naming the first that does not.
//
// Reading rows is most of the work (the pure-Go SQLite decoding them; the
// store reads them below database/sql), so reading and hashing run on two
// goroutines (two cores): the reader copies each batch of entries into an
// arena of its own and hands it over; the verifier checks them in order.
// Reading parts of the trail on two connections at once measured slower,
// not faster, with that driver (docs/benchmarks.md).
func Verify(ctx context.Context, sc Scanner) (int64, error) {
	const batchLen = 1024
	type batch struct {
		es    []Entry
		arena []byte
	}
	full, free := make(chan *batch, 4), make(chan *batch, 4)
	var v Verifier
	done := make(chan struct{})
	go func() {
		defer close(done)
		for b := range full {
			for i := range b.es {
				v.Add(&b.es[i])
			}
			b.es, b.arena = b.es[:0], b.arena[:0]
			free <- b
		}
	}()
	for range cap(free) {
		free <- &batch{es: make([]Entry, 0, batchLen), arena: make([]byte, 0, batchLen*256)}
	}
	cur := <-free
	keep := func(arena *[]byte, b []byte) []byte {
		if b == nil {
			return nil
		}
		n := len(*arena)
		*arena = append(*arena, b...)
		return (*arena)[n:len(*arena):len(*arena)]
	}
	err := sc.ScanAudit(ctx, func(e *Entry) error {
		c := *e // its strings are its own; its slices are the row's
		c.Detail = keep(&cur.arena, e.Detail)
		c.PrevHash = keep(&cur.arena, e.PrevHash)
		c.Hash = keep(&cur.arena, e.Hash)
		cur.es = append(cur.es, c)
		if len(cur.es) == batchLen {
			full <- cur
			cur = <-free
		}
		return nil
	})
	if len(cur.es) > 0 {
		full <- cur
	}
	close(full)
	<-done
	if err != nil && v.err == nil {
		return 0, err
	}
	return v.Result()
}
