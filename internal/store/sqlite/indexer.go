package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/parleyhq/parley/internal/chat"
)

// The indexer keeps search (search_rows, search_text, search_open) in step
// with the log after the commits, so a commit pays nothing for search (FTS5 in
// the commit's transaction took a one-chunk commit from 66 to 148 µs). One
// goroutine owns the indexing; Commit only marks the threads it wrote. The
// index may trail the log, never the other way round: it is built from
// committed rows only. search_done is its per-thread high-water mark, so
// whatever a crash left unindexed is indexed when the store opens again.
// Search waits until what was committed before it is indexed.
//
// Lock order (docs/locks.md): indexer.mu is a leaf; nothing is called while holding it.
type indexer struct {
	s      *Store
	logger *slog.Logger

	mu sync.Mutex
	// dirty holds the threads committed to since the indexer last took them.
	dirty map[chat.ThreadID]struct{}
	// asked counts the marks; done is the asked value whose threads are
	// indexed. progress is closed (and replaced) whenever done moves.
	asked, done uint64
	progress    chan struct{}
	hurry       bool  // a Search waits: skip the linger
	failed      error // the last round's failure, for a waiting Search

	wake   chan struct{} // cap 1
	stop   context.CancelFunc
	exited chan struct{}

	stmts map[string]*sql.Stmt // prepared on the writer; the indexer goroutine's
}

// indexLinger is how long the indexer lets commits gather before a round,
// unless a Search waits: a fast stream is indexed in a few transactions
// instead of one per commit.
const indexLinger = 20 * time.Millisecond

// indexPage bounds the events one indexing transaction reads, so a long
// catch-up never holds the writer (and every lane's commit) for long.
const indexPage = 512

func startIndexer(s *Store) *indexer {
	ctx, cancel := context.WithCancel(context.Background())
	x := &indexer{
		s: s, logger: s.logger,
		dirty:    map[chat.ThreadID]struct{}{},
		asked:    1, // the catch-up on open
		progress: make(chan struct{}),
		wake:     make(chan struct{}, 1),
		stop:     cancel,
		exited:   make(chan struct{}),
		stmts:    map[string]*sql.Stmt{},
	}
	go x.run(ctx)
	return x
}

// mark tells the indexer a commit wrote to these threads. It never blocks,
// and wakes the indexer only for the first mark of a round: the commits that
// follow while it lingers do not wake it again.
func (x *indexer) mark(threads ...chat.ThreadID) {
	x.mu.Lock()
	first := len(x.dirty) == 0
	for _, th := range threads {
		x.dirty[th] = struct{}{}
	}
	x.asked++
	x.mu.Unlock()
	if first {
		x.kick()
	}
}

func (x *indexer) kick() {
	select {
	case x.wake <- struct{}{}:
	default:
	}
}

// caughtUp returns when everything committed before the call is indexed, the
// context ends, or the indexer stopped. An indexing failure is returned.
func (x *indexer) caughtUp(ctx context.Context) error {
	x.mu.Lock()
	want := x.asked
	x.hurry = true
	x.mu.Unlock()
	x.kick()
	for {
		x.mu.Lock()
		done, ch, failed := x.done, x.progress, x.failed
		x.mu.Unlock()
		if done >= want {
			return nil
		}
		if failed != nil {
			return failed
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-x.exited:
			return errors.New("sqlite: search: the store is closed")
		}
	}
}

// close stops the indexer after its current transaction; what it had not
// indexed is indexed on the next open.
func (x *indexer) close() {
	x.stop()
	<-x.exited
	for _, st := range x.stmts {
		st.Close()
	}
}

func (x *indexer) run(ctx context.Context) {
	defer close(x.exited)
	first := true
	for {
		if !first {
			select {
			case <-ctx.Done():
				return
			case <-x.wake:
			}
			x.mu.Lock()
			hurry := x.hurry
			x.mu.Unlock()
			if !hurry && !x.linger(ctx) {
				return
			}
		}
		x.mu.Lock()
		todo, gen := x.dirty, x.asked
		x.dirty, x.hurry = map[chat.ThreadID]struct{}{}, false
		x.mu.Unlock()
		var err error
		if first {
			err = x.behind(ctx, todo)
		}
		if err == nil {
			err = x.index(ctx, todo)
		}
		if ctx.Err() != nil {
			return
		}
		x.mu.Lock()
		if err != nil {
			// Kept for the next round: the threads stay marked.
			for th := range todo {
				x.dirty[th] = struct{}{}
			}
			x.failed = fmt.Errorf("sqlite: search index: %w", err)
		} else {
			first = false
			x.done, x.failed = gen, nil
		}
		close(x.progress)
		x.progress = make(chan struct{})
		x.mu.Unlock()
		if err != nil {
			x.logger.Warn("sqlite: search index", "err", err)
			select { // not a spin on a failing disk
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			x.kick()
		}
	}
}

// linger waits indexLinger, or less when a Search comes; false when the
// indexer is stopping.
func (x *indexer) linger(ctx context.Context) bool {
	t := time.NewTimer(indexLinger)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		case <-x.wake:
			x.mu.Lock()
			hurry := x.hurry
			x.mu.Unlock()
			if hurry {
				return true
			}
		}
	}
}

// behind adds the threads whose log or title is past the index's mark: what
// a crash (or a Close) left unindexed.
func (x *indexer) behind(ctx context.Context, todo map[chat.ThreadID]struct{}) error {
	rows, err := x.s.r.QueryContext(ctx, `SELECT t.id FROM threads t LEFT JOIN search_done d ON d.thread = t.id
		WHERE d.thread IS NULL OR d.title <> t.title
		OR EXISTS (SELECT 1 FROM events e WHERE e.thread = t.id AND e.seq > d.through)`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return err
		}
		todo[chat.ThreadID(id)] = struct{}{}
	}
	return rows.Err()
}

// index indexes the threads' events past their marks, a transaction for
// each thread's page of at most indexPage events, so lanes' commits go in
// between.
func (x *indexer) index(ctx context.Context, todo map[chat.ThreadID]struct{}) error {
	queue := make([]chat.ThreadID, 0, len(todo))
	for th := range todo {
		queue = append(queue, th)
	}
	for len(queue) > 0 {
		tx, err := x.s.w.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		ctx := context.WithoutCancel(ctx) // as in Commit: no watcher goroutine per statement
		ct := &cachedTx{Tx: tx, stmts: x.stmts, missed: map[string]bool{}}
		_, more, err := indexThread(ctx, ct, queue[0], indexPage)
		if err != nil {
			tx.Rollback()
			return fmt.Errorf("thread %s: %w", queue[0], err)
		}
		if err := tx.Commit(); err != nil {
			return err
		}
		x.s.markCheckpoint()
		if !more {
			queue = queue[1:]
		}
		x.prepare(ctx, ct.missed)
	}
	return nil
}

// prepare prepares on the writer, between transactions (it has one
// connection), the statements a transaction ran unprepared: each is parsed
// and planned once, not once a round.
func (x *indexer) prepare(ctx context.Context, queries map[string]bool) {
	for q := range queries {
		if st, err := x.s.w.PrepareContext(ctx, q); err == nil {
			x.stmts[q] = st
		}
	}
}

// cachedTx runs a transaction's statements through the indexer's prepared
// ones, and notes those it has not prepared yet. Owned by the indexer.
type cachedTx struct {
	*sql.Tx
	stmts  map[string]*sql.Stmt
	missed map[string]bool
}

func (c *cachedTx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if st := c.stmts[q]; st != nil {
		return c.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	c.missed[q] = true
	return c.Tx.ExecContext(ctx, q, args...)
}

func (c *cachedTx) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	if st := c.stmts[q]; st != nil {
		return c.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	c.missed[q] = true
	return c.Tx.QueryRowContext(ctx, q, args...)
}

func (c *cachedTx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if st := c.stmts[q]; st != nil {
		return c.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	c.missed[q] = true
	return c.Tx.QueryContext(ctx, q, args...)
}

// indexThread indexes up to limit of a thread's events past its mark, and its
// title when it changed, and moves the mark. more says events are left.
func indexThread(ctx context.Context, tx *cachedTx, th chat.ThreadID, limit int) (n int, more bool, err error) {
	var title string
	err = tx.QueryRowContext(ctx, `SELECT title FROM threads WHERE id = ?`, string(th)).Scan(&title)
	if errors.Is(err, sql.ErrNoRows) { // deleted meanwhile: DeleteThread took its rows
		_, err = tx.ExecContext(ctx, `DELETE FROM search_done WHERE thread = ?`, string(th))
		return 0, false, err
	}
	if err != nil {
		return 0, false, err
	}
	var through int64
	var indexedTitle sql.NullString
	err = tx.QueryRowContext(ctx, `SELECT through, title FROM search_done WHERE thread = ?`, string(th)).Scan(&through, &indexedTitle)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, false, err
	}
	if !indexedTitle.Valid || indexedTitle.String != title {
		if err := indexTitle(ctx, tx, th, title); err != nil {
			return 0, false, err
		}
	}
	// Only the payloads search reads are read: a person's messages, and an
	// answer's chunks until it has used its budget. Past it (a streamed log
	// dump of megabytes), the page ends with the answer: the next answer's
	// chunks are read in the next.
	var indexed int64
	var pending string
	err = tx.QueryRowContext(ctx, `SELECT indexed, pending FROM search_open WHERE thread = ?`, string(th)).Scan(&indexed, &pending)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, false, err
	}
	// pending begins with the overlap, indexed already (leadOf).
	spent := err == nil && indexed+int64(len(pending)-leadOf(pending)) >= maxIndexed
	rows, err := tx.QueryContext(ctx, `SELECT seq, type, CASE WHEN type = ? OR (type = ? AND NOT ?) THEN payload END FROM events
		WHERE thread = ? AND seq > ? ORDER BY seq LIMIT ?`,
		chat.TypeUserMessage, chat.TypeAgentChunk, spent, string(th), through, limit)
	if err != nil {
		return 0, false, err
	}
	var evs []chat.Event
	for rows.Next() {
		e := chat.Event{Thread: th}
		var typ sql.RawBytes
		var payload []byte // *[]byte copies out of the driver's memory
		if err := rows.Scan(&e.Seq, &typ, &payload); err != nil {
			rows.Close()
			return 0, false, err
		}
		e.Type, e.Payload = eventType(typ), payload
		evs = append(evs, e)
		if spent && endsAnswer(e.Type) {
			break
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, false, err
	}
	if spent && len(evs) > 0 && endsAnswer(evs[len(evs)-1].Type) {
		limit = len(evs) // more may follow, with their payloads
	}
	if err := indexEvents(ctx, tx, evs); err != nil {
		return 0, false, err
	}
	if len(evs) > 0 {
		through = evs[len(evs)-1].Seq
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO search_done (thread, through, title) VALUES (?, ?, ?)
		ON CONFLICT (thread) DO UPDATE SET through = excluded.through, title = excluded.title`, string(th), through, title); err != nil {
		return 0, false, err
	}
	return len(evs), len(evs) == limit, nil
}
