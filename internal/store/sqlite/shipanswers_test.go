package sqlite

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
)

// A ship request's answer is kept across a reopen (a node's restart); the
// first answer stays; one older than a week is forgotten, and goes at the
// next keep.
func TestShipAnswersOutliveARestart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "parley.db")
	s := open(t, path)
	ctx := t.Context()
	if _, err := s.ShipAnswer(ctx, "commit\x00t1\x00r1"); !errors.Is(err, chat.ErrNotFound) {
		t.Fatalf("an answer never kept: %v, want not found", err)
	}
	if err := s.KeepShipAnswer(ctx, "commit\x00t1\x00r1", []byte(`{"result":{"commit":"abc"}}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.KeepShipAnswer(ctx, "commit\x00t1\x00r1", []byte(`{"error":"later"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.ExecContext(ctx, `INSERT INTO ship_answers (key, answer, at) VALUES (?, ?, ?)`,
		"push\x00t1\x00old", []byte(`{}`), time.Now().Add(-8*24*time.Hour).UnixNano()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path)
	if b, err := s.ShipAnswer(ctx, "commit\x00t1\x00r1"); err != nil || string(b) != `{"result":{"commit":"abc"}}` {
		t.Fatalf("after a reopen: %q %v, want the first answer", b, err)
	}
	if _, err := s.ShipAnswer(ctx, "push\x00t1\x00old"); !errors.Is(err, chat.ErrNotFound) {
		t.Fatalf("an answer older than a week: %v, want not found", err)
	}
	if err := s.KeepShipAnswer(ctx, "pr\x00t1\x00r2", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM ship_answers`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("%d answers kept (%v), want 2: the old one goes at the next keep", n, err)
	}
}
