// Package sqlite is parley's default store: one SQLite file in WAL mode through the
// pure-Go driver modernc.org/sqlite, with embedded versioned migrations.
//
// Writes go through a single connection, so Commits never race each other for
// the database lock; reads use a separate pool, so they never wait behind a write.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/parleyhq/parley/internal/store"

	msqlite "modernc.org/sqlite" // also registers the "sqlite" driver
	sqlite3 "modernc.org/sqlite/lib"
)

// busyTimeout is how long a connection waits for a lock held by another process
// (a second parley on the same file, a backup) before failing.
const busyTimeout = 5 * time.Second

// Store is a store.Store on one SQLite file. It is safe for concurrent use.
type Store struct {
	w      *sql.DB // the one writer connection
	r      *sql.DB // the read pool
	logger *slog.Logger
	now    func() time.Time

	closeOnce sync.Once
	closeErr  error

	// Prepared on the writer once; each Commit binds them to its transaction.
	// insEvents inserts eventRows events in one statement.
	insEvent, insEvents, upThread, upCard, upInput *sql.Stmt

	idx *indexer // nil only in tests that stand for a crash before indexing
	// ckpt copies the WAL back into the database file off the writer's
	// commits (checkpoint.go); nil only in tests that open without it.
	ckpt *checkpointer
}

var _ store.Store = (*Store)(nil)

// Open opens (creating it when missing) the database file at path and brings its
// schema up to date. A database written by a newer parley is refused with an
// error wrapping ErrSchemaTooNew. The path must name a file: ":memory:" would give
// the writer and the readers different databases.
func Open(ctx context.Context, path string, logger *slog.Logger) (*Store, error) {
	s, err := openStore(ctx, path, logger)
	if err != nil {
		return nil, err
	}
	// The checkpointer first: the indexer's commits tell it of themselves.
	s.ckpt = startCheckpointer(s, nil)
	s.idx = startIndexer(s)
	return s, nil
}

// openStore is Open without the search indexer.
func openStore(ctx context.Context, path string, logger *slog.Logger) (*Store, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if path == "" || path == ":memory:" {
		return nil, fmt.Errorf("sqlite: open: %q is not a database file path", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	logger = logger.With("db", abs)
	if err := ownFiles(abs, logger); err != nil {
		return nil, err
	}

	ms := strconvMillis(busyTimeout)
	w, err := sql.Open("sqlite", dsn(abs, url.Values{
		"_busy_timeout": {ms},
		"_journal_mode": {"WAL"},
		"_synchronous":  {"NORMAL"},
		"_foreign_keys": {"1"},
		// The checkpointer copies the WAL back (checkpoint.go); the writer
		// only when it falls far behind.
		"_pragma": {"wal_autocheckpoint(" + fmt.Sprint(walFallbackPages) + ")"},
		// The transaction takes the write lock at BEGIN, so it never fails
		// half-way on a lock upgrade.
		"_txlock": {"immediate"},
	}))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", abs, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)

	if err := connectWriter(ctx, w); err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", abs, err)
	}
	// Migrate before the readers open, so they find WAL mode and the schema set.
	if err := migrate(ctx, w, logger); err != nil {
		w.Close()
		return nil, err
	}

	r, err := sql.Open("sqlite", dsn(abs, url.Values{
		"_busy_timeout": {ms},
		"_foreign_keys": {"1"},
		"_query_only":   {"1"}, // a guard: nothing writes through the read pool
	}))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: open %s readers: %w", abs, err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)

	s := &Store{w: w, r: r, logger: logger, now: time.Now}
	if err := s.prepare(ctx); err != nil {
		s.Close()
		return nil, err
	}
	if err := r.PingContext(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlite: open %s readers: %w", abs, err)
	}
	logger.Debug("sqlite: store open")
	return s, nil
}

// dsn builds a file: URI, so a path holding '?' or '#' stays a path.
// connectWriter opens the writer's one connection, which turns on WAL mode.
// SQLite takes the lock for that switch without its busy handler: while
// another process creates the same new database file, it answers SQLITE_BUSY
// at once, whatever the busy timeout. The connection is tried again for as
// long as the busy timeout would have waited.
func connectWriter(ctx context.Context, w *sql.DB) error {
	deadline := time.Now().Add(busyTimeout)
	for {
		c, err := w.Conn(ctx)
		if err == nil {
			return c.Close() // kept idle in the pool for the migration
		}
		var se *msqlite.Error
		if !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_BUSY || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func dsn(abs string, q url.Values) string {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}
	return u.String()
}

func strconvMillis(d time.Duration) string { return fmt.Sprint(d.Milliseconds()) }

func (s *Store) prepare(ctx context.Context) error {
	for _, p := range []struct {
		stmt **sql.Stmt
		sql  string
	}{
		{&s.insEvent, `INSERT INTO events (thread, seq, type, ts, payload) VALUES (?, ?, ?, ?, ?)`},
		{&s.insEvents, `INSERT INTO events (thread, seq, type, ts, payload) VALUES (?, ?, ?, ?, ?)` +
			strings.Repeat(`, (?, ?, ?, ?, ?)`, eventRows-1)},
		{&s.upThread, `INSERT INTO threads (id, agent, cwd, session_id, title, state, mode, created_at, updated_at, last_seq, turn_message_id, archived, git_base, worktree, model)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET agent = excluded.agent, cwd = excluded.cwd,
				session_id = excluded.session_id, title = excluded.title, state = excluded.state,
				mode = excluded.mode, created_at = excluded.created_at, updated_at = excluded.updated_at,
				last_seq = excluded.last_seq, turn_message_id = excluded.turn_message_id, archived = excluded.archived,
				model = excluded.model`}, // git_base and worktree: set once, at the thread's start
		{&s.upCard, `INSERT INTO cards (thread, request_id, kind, state, request, resolution, turn_message_id, created_at, resolved_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (thread, request_id) DO UPDATE SET kind = excluded.kind, state = excluded.state,
				request = excluded.request, resolution = excluded.resolution,
				turn_message_id = excluded.turn_message_id, created_at = excluded.created_at,
				resolved_at = excluded.resolved_at`},
		// ord is left alone on update: an input keeps its place in the queue.
		{&s.upInput, `INSERT INTO inputs (message_id, ord, thread, channel, chat, text, state, detail, accepted_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (channel, chat, message_id) DO UPDATE SET thread = excluded.thread, text = excluded.text, state = excluded.state,
				detail = excluded.detail, accepted_at = excluded.accepted_at`},
	} {
		st, err := s.w.PrepareContext(ctx, p.sql)
		if err != nil {
			return fmt.Errorf("sqlite: prepare: %w", err)
		}
		*p.stmt = st
	}
	return nil
}

// Close closes both pools; the writer last, so SQLite checkpoints the WAL. It is
// safe to call more than once.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		if s.idx != nil {
			s.idx.close()
		}
		if s.ckpt != nil {
			s.ckpt.close()
		}
		var errs []error
		for _, st := range []*sql.Stmt{s.insEvent, s.insEvents, s.upThread, s.upCard, s.upInput} {
			if st != nil {
				errs = append(errs, st.Close())
			}
		}
		errs = append(errs, s.r.Close(), s.w.Close())
		if err := errors.Join(errs...); err != nil {
			s.closeErr = fmt.Errorf("sqlite: close: %w", err)
		}
	})
	return s.closeErr
}

// nanos stores a time as UTC Unix nanoseconds; the zero time is NULL.
func nanos(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixNano(), Valid: true}
}

// fromNanos is nanos reversed: the time in UTC, or the zero time for NULL.
func fromNanos(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.Unix(0, n.Int64).UTC()
}

// boolInt stores a bool as SQLite's 0 or 1.
func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// blob stores an empty JSON value as NULL, so it reads back as nil.
func blob(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return []byte(b)
}
