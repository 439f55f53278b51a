package daemon

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/sqlite"
)

// The pruner prunes at start what is older than limits.retain_events, again
// every retain/24 (an hour at most), and stops before the store closes; with
// retention off it prunes nothing. In synctest's fake time: the hour between
// passes goes by at once.
func TestPrunerDeletesEventsOlderThanTheRetention(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st, err := sqlite.Open(ctx, filepath.Join(dir, "parley.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		now := time.Now()
		th := chat.Thread{ID: "t1", Agent: "a", Cwd: "/", State: chat.ThreadIdle, LastSeq: 3, CreatedAt: now, UpdatedAt: now}
		var evs []chat.Event
		for seq, age := range []time.Duration{100 * time.Hour, 71*time.Hour + 30*time.Minute, time.Minute} {
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

		startPruner(st, 0, time.Now, slog.New(slog.DiscardHandler)).stop()
		if got := kept(); len(got) != 3 {
			t.Fatalf("retention off: kept %v, want every event", got)
		}
		p := startPruner(st, 72*time.Hour, time.Now, slog.New(slog.DiscardHandler))
		defer p.stop()
		synctest.Wait()
		if got := kept(); !slices.Equal(got, []int64{2, 3}) {
			t.Fatalf("retain 72h, at start: kept %v, want [2 3]", got)
		}
		time.Sleep(time.Hour) // the next pass: event 2 is now older than 72 h
		synctest.Wait()
		if got := kept(); !slices.Equal(got, []int64{3}) {
			t.Fatalf("retain 72h, an hour on: kept %v, want [3]", got)
		}
	})
}
