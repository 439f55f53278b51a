package daemon

import (
	"encoding/json"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/sqlite"
	"github.com/parleyhq/parley/internal/testkit"
)

// The pruner prunes at start what is older than limits.retain_events, and
// stops before the store closes; with retention off it prunes nothing.
func TestPrunerDeletesEventsOlderThanTheRetention(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "parley.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	th := chat.Thread{ID: "t1", Agent: "a", Cwd: "/", State: chat.ThreadIdle, LastSeq: 3, CreatedAt: now, UpdatedAt: now}
	var evs []chat.Event
	for seq, age := range []time.Duration{100 * time.Hour, 50 * time.Hour, time.Minute} {
		evs = append(evs, chat.Event{Type: chat.TypeAgentChunk, Thread: th.ID, Seq: int64(seq + 1), TS: now.Add(-age),
			Payload: json.RawMessage(`{"text":"x"}`)})
	}
	if err := st.Commit(ctx, store.Batch{Thread: &th, Events: evs}); err != nil {
		t.Fatal(err)
	}
	kept := func() []int64 {
		got, err := st.Events(ctx, th.ID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		var seqs []int64
		for _, e := range got {
			seqs = append(seqs, e.Seq)
		}
		return seqs
	}
	clock := func() time.Time { return now }

	startPruner(st, 0, clock, slog.New(slog.DiscardHandler)).stop()
	if got := kept(); len(got) != 3 {
		t.Fatalf("retention off: kept %v, want every event", got)
	}
	p := startPruner(st, 72*time.Hour, clock, slog.New(slog.DiscardHandler))
	testkit.Within(10*time.Second, func() bool { return len(kept()) != 3 }) // the pruner's first pass; judged below
	p.stop()
	if got := kept(); len(got) != 2 || got[0] != 2 {
		t.Fatalf("retain 72h: kept %v, want [2 3]", got)
	}
}
