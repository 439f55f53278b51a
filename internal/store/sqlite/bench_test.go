package sqlite

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/store"
)

// benchPayload is about the size of a streamed agent_chunk.
var benchPayload = json.RawMessage(`{"text":"Let me look at the failing test first; it reads the config twice.","message_id":"msg_01XYZ"}`)

func benchStore(b *testing.B) (*Store, chat.ThreadID) {
	b.Helper()
	s := open(b, filepath.Join(b.TempDir(), "bench.db"))
	th := chat.Thread{ID: "t1", Agent: "claude", State: chat.ThreadWorking, CreatedAt: time.Now(), UpdatedAt: time.Now()}
	if err := s.Commit(b.Context(), store.Batch{Thread: &th}); err != nil {
		b.Fatal(err)
	}
	return s, th.ID
}

func benchCommit(b *testing.B, perBatch int, withThread bool) {
	s, id := benchStore(b)
	ctx := b.Context()
	th := chat.Thread{ID: id, Agent: "claude", State: chat.ThreadWorking}
	evs := make([]chat.Event, perBatch)
	seq := int64(0)
	b.ReportAllocs()
	for b.Loop() {
		now := time.Now()
		for i := range evs {
			seq++
			evs[i] = chat.Event{Type: chat.TypeAgentChunk, Thread: id, Seq: seq, TS: now, Payload: benchPayload}
		}
		batch := store.Batch{Events: evs}
		if withThread {
			th.LastSeq, th.UpdatedAt = seq, now
			batch.Thread = &th
		}
		if err := s.Commit(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(seq), "ns/event")
}

// BenchmarkCommit1Event is one lane step that writes one event.
func BenchmarkCommit1Event(b *testing.B) { benchCommit(b, 1, false) }

// BenchmarkCommit1EventAndThread is the common lane step: an event and the thread's LastSeq.
func BenchmarkCommit1EventAndThread(b *testing.B) { benchCommit(b, 1, true) }

// BenchmarkCommit64Events is a burst of streamed chunks written as one batch.
func BenchmarkCommit64Events(b *testing.B) { benchCommit(b, 64, false) }

// BenchmarkEvents10000 is the read behind a replay of 10,000 events to a new connection.
func BenchmarkEvents10000(b *testing.B) {
	s, id := benchStore(b)
	ctx := b.Context()
	const n = 10_000
	evs := make([]chat.Event, 0, 500)
	now := time.Now()
	for seq := int64(1); seq <= n; seq++ {
		evs = append(evs, chat.Event{Type: chat.TypeAgentChunk, Thread: id, Seq: seq, TS: now, Payload: benchPayload})
		if len(evs) == cap(evs) {
			if err := s.Commit(ctx, store.Batch{Events: evs}); err != nil {
				b.Fatal(err)
			}
			evs = evs[:0]
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		got, err := s.Events(ctx, id, 0, 0)
		if err != nil {
			b.Fatal(err)
		}
		if len(got) != n {
			b.Fatalf("got %d events, want %d", len(got), n)
		}
	}
}
