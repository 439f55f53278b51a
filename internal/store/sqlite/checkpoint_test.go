package sqlite

import (
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/store"
)

// TestCheckpointerCopiesTheWALBack: after a commit the checkpointer, not the
// writer's commit, copies the WAL into the database file, all of it when no
// reader holds an older snapshot; the writer's own autocheckpoint is only the
// far fallback.
func TestCheckpointerCopiesTheWALBack(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, err := openStore(ctx, filepath.Join(t.TempDir(), "parley.db"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		log, done int64
		err       error
	}
	runs := make(chan result, 16)
	s.ckpt = startCheckpointer(s, func(log, done int64, err error) {
		select {
		case runs <- result{log, done, err}:
		default:
		}
	})
	t.Cleanup(func() { s.Close() })

	var pages int64
	if err := s.w.QueryRowContext(ctx, `PRAGMA wal_autocheckpoint`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if pages != walFallbackPages {
		t.Errorf("the writer's wal_autocheckpoint is %d pages, want the fallback %d", pages, walFallbackPages)
	}

	th := chat.Thread{ID: "t1", Agent: "a", Cwd: "/w", LastSeq: 2}
	if err := s.Commit(ctx, store.Batch{Thread: &th, Events: []chat.Event{
		ev(t, "t1", 1, chat.UserMessage{MessageID: "m1", Text: "hello"}),
		ev(t, "t1", 2, chat.AgentChunk{Text: "hi"}),
	}}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-runs:
		if r.err != nil {
			t.Fatalf("checkpoint: %v", r.err)
		}
		if r.log == 0 || r.done != r.log {
			t.Errorf("checkpoint copied %d of the WAL's %d frames, want all of them (and some)", r.done, r.log)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no checkpoint ran after a commit")
	}
}
