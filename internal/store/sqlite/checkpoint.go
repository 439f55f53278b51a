package sqlite

import (
	"context"
	"sync"
	"time"
)

// SQLite copies the WAL back into the database file (a checkpoint) on the
// connection whose commit took the WAL past wal_autocheckpoint pages, inside
// that commit: the WAL and the database file written and fsynced while the
// commit's caller waits. On the one writer connection that caller is a lane:
// a streamed chunk waited for it about every 65 chunks, several milliseconds
// each (each fsync 8–65 ms under load), most of the gateway's 99th-percentile
// latency at one connection (docs/benchmarks.md, issue 17).
//
// The checkpointer takes that work off the writer: a passive checkpoint on a
// read-pool connection, which copies what no reader still needs without
// waiting for (or holding up) the writer's commits. The writer keeps its own
// autocheckpoint, at walFallbackPages, only for when the checkpointer falls far
// behind.
const (
	// checkpointEvery bounds how often the checkpointer runs while commits
	// come: the WAL holds at most about this much time's writes.
	checkpointEvery = 250 * time.Millisecond
	// walFallbackPages is the writer's own autocheckpoint (SQLite's default is
	// 1000 pages): 16 MB of 4 KiB pages.
	walFallbackPages = 4000
)

type checkpointer struct {
	s      *Store
	wake   chan struct{} // capacity 1: a commit happened since the last run
	stop   context.CancelFunc
	exited chan struct{}
	// ran, when set (tests), hears each run's result: the WAL's frames and
	// how many of them are now in the database file.
	ran func(log, done int64, err error)

	closeOnce sync.Once
}

func startCheckpointer(s *Store, ran func(log, done int64, err error)) *checkpointer {
	ctx, cancel := context.WithCancel(context.Background())
	c := &checkpointer{s: s, wake: make(chan struct{}, 1), stop: cancel, exited: make(chan struct{}), ran: ran}
	go c.run(ctx)
	return c
}

// committed tells the checkpointer the WAL grew. It never blocks.
func (c *checkpointer) committed() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *checkpointer) run(ctx context.Context) {
	defer close(c.exited)
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		}
		// Commits that come meanwhile are taken by this run: the wake they
		// leave only starts the next one.
		if wait := checkpointEvery - time.Since(last); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		last = time.Now()
		var busy, log, done int64
		err := c.s.r.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &log, &done)
		if err != nil && ctx.Err() == nil {
			// Nothing is lost: the WAL is the data; the writer's own
			// autocheckpoint still bounds it.
			c.s.logger.Warn("sqlite: checkpoint failed", "err", err)
		}
		if c.ran != nil {
			c.ran(log, done, err)
		}
	}
}

// close stops the checkpointer; the writer's close checkpoints what is left.
func (c *checkpointer) close() {
	c.closeOnce.Do(func() {
		c.stop()
		<-c.exited
	})
}
