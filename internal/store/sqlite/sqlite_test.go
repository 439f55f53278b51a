package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(t testing.TB, path string) *Store {
	t.Helper()
	s, err := Open(t.Context(), path, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	t.Parallel()
	dir := t.TempDir() // one folder for the whole suite, so a name reopens its file
	storetest.Run(t, func(t *testing.T, name string) store.Store {
		s, err := Open(t.Context(), filepath.Join(dir, name+".db"), slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatalf("Open(%s): %v", name, err)
		}
		return s
	})
}

// raw opens the file with no parley code in between, to see or tamper with what is on disk.
func raw(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatalf("raw open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestMigrationsRecordedOnce(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "parley.db")
	for range 3 {
		s := open(t, path)
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	rows, err := raw(t, path).QueryContext(t.Context(), `SELECT version, name FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatalf("read schema_migrations: %v", err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var v int
		var name string
		if err := rows.Scan(&v, &name); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%d %s", v, name))
	}
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, m := range ms {
		want = append(want, fmt.Sprintf("%d %s", m.version, m.name))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("schema_migrations after three opens: got %v, want %v", got, want)
	}
	if SchemaVersion() != len(ms) || SchemaVersion() < 1 {
		t.Errorf("SchemaVersion: got %d, want %d", SchemaVersion(), len(ms))
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "parley.db")
	s := open(t, path)
	th := chat.Thread{ID: "t1", State: chat.ThreadIdle}
	if err := s.Commit(t.Context(), store.Batch{Thread: &th}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// What a newer parley would leave behind.
	newer := SchemaVersion() + 1
	db := raw(t, path)
	if _, err := db.ExecContext(t.Context(), `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'from_the_future.sql', 0)`, newer); err != nil {
		t.Fatal(err)
	}
	db.Close()

	_, err := Open(t.Context(), path, slog.New(slog.DiscardHandler))
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Open of a schema %d database: got %v, want ErrSchemaTooNew", newer, err)
	}
	if want := fmt.Sprintf("schema %d", newer); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name the version (%q)", err, want)
	}
}

// SQLite keeps times as Unix nanoseconds, so they come back exactly, beyond the
// millisecond the interface promises.
func TestTimesKeepNanoseconds(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "parley.db"))
	ctx := t.Context()
	for _, ts := range []time.Time{
		time.Date(2026, 12, 2, 17, 30, 0, 123_456_789, time.FixedZone("PST", -8*3600)),
		time.Date(1999, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(2200, 6, 30, 23, 59, 59, 999_999_999, time.UTC),
		time.Unix(0, 1).UTC(),
	} {
		th := chat.Thread{ID: "t1", State: chat.ThreadIdle, CreatedAt: ts, UpdatedAt: ts, LastSeq: 1}
		ev := chat.Event{Type: chat.TypeAgentChunk, Thread: "t1", Seq: 1, TS: ts, Payload: json.RawMessage(`{}`)}
		if err := s.Commit(ctx, store.Batch{Thread: &th}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.w.ExecContext(ctx, `DELETE FROM events`); err != nil {
			t.Fatal(err)
		}
		if err := s.Commit(ctx, store.Batch{Events: []chat.Event{ev}}); err != nil {
			t.Fatal(err)
		}
		got, err := s.Thread(ctx, "t1")
		if err != nil {
			t.Fatal(err)
		}
		evs, err := s.Events(ctx, "t1", 0, 0)
		if err != nil || len(evs) != 1 {
			t.Fatalf("Events: got %d, %v", len(evs), err)
		}
		for what, g := range map[string]time.Time{"created_at": got.CreatedAt, "updated_at": got.UpdatedAt, "event ts": evs[0].TS} {
			if !g.Equal(ts) || g.Location() != time.UTC {
				t.Errorf("%s: got %v, want %v in UTC", what, g, ts.UTC())
			}
		}
	}
}

func TestPragmas(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "parley.db"))
	ctx := t.Context()
	for _, tc := range []struct {
		db     *sql.DB
		pragma string
		want   string
	}{
		{s.w, "journal_mode", "wal"},
		{s.w, "synchronous", "1"}, // NORMAL
		{s.w, "foreign_keys", "1"},
		{s.w, "busy_timeout", fmt.Sprint(busyTimeout.Milliseconds())},
		{s.r, "journal_mode", "wal"},
		{s.r, "busy_timeout", fmt.Sprint(busyTimeout.Milliseconds())},
		{s.r, "query_only", "1"},
	} {
		var got string
		if err := tc.db.QueryRowContext(ctx, "PRAGMA "+tc.pragma).Scan(&got); err != nil {
			t.Fatalf("PRAGMA %s: %v", tc.pragma, err)
		}
		who := "writer"
		if tc.db == s.r {
			who = "reader"
		}
		if got != tc.want {
			t.Errorf("%s PRAGMA %s: got %q, want %q", who, tc.pragma, got, tc.want)
		}
	}
}

// A read must not wait behind an open write transaction: that is why reads have
// their own pool.
func TestReadsDoNotWaitForWrites(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "parley.db"))
	ctx := t.Context()
	th := chat.Thread{ID: "t1", State: chat.ThreadIdle, LastSeq: 1}
	if err := s.Commit(ctx, store.Batch{Thread: &th, Events: []chat.Event{{Type: chat.TypeAgentChunk, Thread: "t1", Seq: 1, Payload: json.RawMessage(`{}`)}}}); err != nil {
		t.Fatal(err)
	}
	tx, err := s.w.BeginTx(ctx, nil) // holds the writer connection and the write lock
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE threads SET title = 'uncommitted'`); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	got, err := s.Thread(rctx, "t1")
	if err != nil {
		t.Fatalf("Thread while a write is open: %v", err)
	}
	if got.Title != "" {
		t.Errorf("Thread while a write is open: got title %q, want the committed %q", got.Title, "")
	}
	if evs, err := s.Events(rctx, "t1", 0, 0); err != nil || len(evs) != 1 {
		t.Errorf("Events while a write is open: got %d, %v; want 1, nil", len(evs), err)
	}
}

func TestOpenRefusesNonFiles(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"", ":memory:"} {
		if s, err := Open(t.Context(), path, nil); err == nil {
			s.Close()
			t.Errorf("Open(%q): got nil error, want one", path)
		}
	}
	// A folder that does not exist is an error, not a panic or a silent in-memory store.
	if s, err := Open(t.Context(), filepath.Join(t.TempDir(), "missing", "parley.db"), nil); err == nil {
		s.Close()
		t.Error("Open in a missing folder: got nil error, want one")
	}
}

// A path with URI-special characters is still just a path.
func TestOpenOddPath(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "a dir?with#odd%chars")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "parley.db")
	s := open(t, path)
	th := chat.Thread{ID: "t1", State: chat.ThreadIdle}
	if err := s.Commit(t.Context(), store.Batch{Thread: &th}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("database file: %v", err)
	}
}

func TestCommitHonoursContext(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "parley.db"))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	th := chat.Thread{ID: "t1", State: chat.ThreadIdle}
	if err := s.Commit(ctx, store.Batch{Thread: &th}); !errors.Is(err, context.Canceled) {
		t.Errorf("Commit with a cancelled context: got %v, want context.Canceled", err)
	}
	if _, err := s.Thread(t.Context(), "t1"); !errors.Is(err, chat.ErrNotFound) {
		t.Errorf("Thread after a cancelled Commit: got %v, want chat.ErrNotFound", err)
	}
}

// Two parleys opening one new file at once (a second start, a CLI beside the daemon)
// both succeed, and each migration is applied once.
func TestConcurrentOpenMigratesOnce(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "parley.db")
	const n = 4
	errs := make(chan error, n)
	stores := make(chan *Store, n)
	for range n {
		go func() {
			s, err := Open(t.Context(), path, slog.New(slog.DiscardHandler))
			errs <- err
			stores <- s
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("concurrent Open: %v", err)
		}
		if s := <-stores; s != nil {
			t.Cleanup(func() { _ = s.Close() })
		}
	}
	var count, top int
	if err := raw(t, path).QueryRowContext(t.Context(), `SELECT COUNT(*), MAX(version) FROM schema_migrations`).Scan(&count, &top); err != nil {
		t.Fatal(err)
	}
	if count != SchemaVersion() || top != SchemaVersion() {
		t.Errorf("schema_migrations: got %d rows up to version %d, want %d up to %d", count, top, SchemaVersion(), SchemaVersion())
	}
}

// TestInputsKeptAcrossTheRouteMigration: inputs a schema 1 database holds
// (message ids unique across routes) are the route's after migration 2, in
// their order, and another route may then reuse an id.
func TestInputsKeptAcrossTheRouteMigration(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "parley.db")
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	db := raw(t, path)
	for _, q := range []string{
		`CREATE TABLE schema_migrations (version INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`,
		ms[0].sql,
		`INSERT INTO schema_migrations VALUES (1, '` + ms[0].name + `', 0)`,
		`INSERT INTO threads VALUES ('t1', 'a', '/w', '', '', 'idle', '', 0, 0, 0, '')`,
		`INSERT INTO inputs VALUES ('m2', 1, 't1', 'web', 'c1', 'second', 'queued', '', 7)`,
		`INSERT INTO inputs VALUES ('m1', 2, 't1', 'web', 'c1', 'first', 'failed', 'why', 8)`,
		`INSERT INTO inputs VALUES ('m3', 3, 't1', 'tui', 'c2', 'third', 'queued', '', 9)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()

	s := open(t, path)
	web := chat.RouteKey{Channel: "web", Chat: "c1"}
	if in, err := s.Input(ctx, web, "m1"); err != nil || in.Text != "first" || in.State != chat.DeliveryFailed || in.Detail != "why" {
		t.Errorf("Input(web:c1, m1) after the migration: got %+v, %v", in, err)
	}
	p, err := s.PendingInputs(ctx)
	if err != nil || len(p) != 2 || p[0].MessageID != "m2" || p[1].MessageID != "m3" {
		t.Fatalf("pending after the migration: got %+v, %v; want m2 then m3", p, err)
	}
	other := chat.Input{MessageID: "m1", ThreadID: "t1", From: chat.RouteKey{Channel: "tui", Chat: "c2"}, Text: "other", State: chat.DeliveryQueued}
	if err := s.Commit(ctx, store.Batch{Inputs: []chat.Input{other}}); err != nil {
		t.Fatalf("another route's m1: %v", err)
	}
	if p, _ := s.PendingInputs(ctx); len(p) != 3 || p[2].Text != "other" {
		t.Errorf("pending after another route's m1: got %+v, want it last", p)
	}
}

// The asks an older parley kept (schema 8, no ask id) each take an id of
// their own when the store opens.
func TestAsksKeptBeforeSchema9TakeAnID(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "parley.db")
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	db := raw(t, path)
	qs := []string{`CREATE TABLE schema_migrations (version INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`}
	for _, m := range ms[:8] {
		qs = append(qs, m.sql, fmt.Sprintf(`INSERT INTO schema_migrations VALUES (%d, '%s', 0)`, m.version, m.name))
	}
	qs = append(qs, `INSERT INTO route_asks VALUES ('irc', '#dev', 'claude', '/w', 'b')`,
		`INSERT INTO route_asks VALUES ('tui', 'c1', 'gemini', '', 'c')`)
	for _, q := range qs {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()

	s := open(t, path)
	asks, err := s.RouteAsks(ctx)
	if err != nil || len(asks) != 2 {
		t.Fatalf("asks after the migration: %+v %v", asks, err)
	}
	if asks[0].AskID == "" || asks[1].AskID == "" || asks[0].AskID == asks[1].AskID ||
		asks[0].Agent != "claude" || asks[1].Node != "c" {
		t.Fatalf("asks after the migration: %+v, want each kept with an id of its own", asks)
	}
}
