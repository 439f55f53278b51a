package sqlite

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/store"
)

// indexedNow waits, without asking for it, until the indexer has indexed
// everything committed before the call: what a person's search finds a
// moment after the message, with nobody searching meanwhile.
func indexedNow(t *testing.T, s *Store) {
	t.Helper()
	x := s.idx
	x.mu.Lock()
	want := x.asked
	x.mu.Unlock()
	for {
		x.mu.Lock()
		done, ch, failed := x.done, x.progress, x.failed
		x.mu.Unlock()
		if done >= want {
			return
		}
		if failed != nil {
			t.Fatalf("indexer: %v", failed)
		}
		select {
		case <-ch:
		case <-t.Context().Done():
			t.Fatal("the indexer did not catch up")
		}
	}
}

// rowsFor lists a thread's search rows as "kind/seq:text", straight from the
// tables (Search would wait for the indexer itself).
func rowsFor(t *testing.T, s *Store, thread string) []string {
	t.Helper()
	rows, err := s.r.QueryContext(t.Context(), `SELECT r.kind, r.seq, x.text FROM search_rows r JOIN search_text x ON x.rowid = r.row
		WHERE r.thread = ? ORDER BY r.row`, thread)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var kind, text string
		var seq int64
		if err := rows.Scan(&kind, &seq, &text); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s/%d:%s", kind, seq, text))
	}
	return out
}

// TestCommitLeavesSearchToTheIndexer: a commit writes no search row (that is
// what made it slow); the indexer indexes it soon after on its own, with
// nobody searching.
func TestCommitLeavesSearchToTheIndexer(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "parley.db")
	s, err := openStore(ctx, path, slog.New(slog.DiscardHandler)) // no indexer
	if err != nil {
		t.Fatal(err)
	}
	th := chat.Thread{ID: "t1", Agent: "a", Cwd: "/w", Title: "Ferry timetable", LastSeq: 2}
	if err := s.Commit(ctx, store.Batch{Thread: &th, Events: []chat.Event{
		ev(t, "t1", 1, chat.UserMessage{MessageID: "m1", Text: "when does the ferry leave?"}),
		ev(t, "t1", 2, chat.AgentChunk{Text: "At noon "}),
	}}); err != nil {
		t.Fatal(err)
	}
	if got := rowsFor(t, s, "t1"); len(got) != 0 {
		t.Errorf("search rows written by the commit itself: %q", got)
	}
	s.Close()

	s = open(t, path)
	indexedNow(t, s) // the catch-up on open
	th.LastSeq = 4
	if err := s.Commit(ctx, store.Batch{Thread: &th, Events: []chat.Event{
		ev(t, "t1", 3, chat.AgentChunk{Text: "sharp."}),
		ev(t, "t1", 4, chat.PromptDone{StopReason: chat.StopEndTurn}),
	}}); err != nil {
		t.Fatal(err)
	}
	indexedNow(t, s)
	// The second row of the answer begins with the last words of the first (the overlap).
	want := "title/0:Ferry timetable|user/1:when does the ferry leave?|agent/2:At noon |agent/2:At noon sharp."
	if got := strings.Join(rowsFor(t, s, "t1"), "|"); got != want {
		t.Errorf("search rows after the indexer ran:\n got %s\nwant %s", got, want)
	}
}

// TestSearchCatchesUpAfterACrash: events committed but not indexed when the
// process died (here: a store closed without its indexer) are indexed when
// the store opens again, titles too, and an answer indexed across many
// indexing transactions keeps its words whole and its place.
func TestSearchCatchesUpAfterACrash(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "parley.db")
	s := open(t, path)
	th := chat.Thread{ID: "t1", Agent: "a", Cwd: "/w", Title: "Old name", LastSeq: 1}
	if err := s.Commit(ctx, store.Batch{Thread: &th, Events: []chat.Event{ev(t, "t1", 1, chat.UserMessage{MessageID: "m1", Text: "tell me about walruses"})}}); err != nil {
		t.Fatal(err)
	}
	wantHits(t, s, "walruses", "t1/user/1") // indexed before the crash
	s.Close()

	// The crash: commits whose indexing never ran.
	crashed, err := openStore(ctx, path, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	th.Title = "Pinniped facts"
	evs := []chat.Event{ev(t, "t1", 2, chat.AgentChunk{Text: "Walruses "})}
	const chunks = 3 * indexPage // three indexing transactions and more
	for seq := int64(3); seq < chunks; seq++ {
		evs = append(evs, ev(t, "t1", seq, chat.AgentChunk{Text: "tusk"}))
	}
	evs = append(evs, ev(t, "t1", chunks, chat.AgentChunk{Text: "s and whiskers."}), ev(t, "t1", chunks+1, chat.PromptDone{StopReason: chat.StopEndTurn}))
	th.LastSeq = chunks + 1
	if err := crashed.Commit(ctx, store.Batch{Thread: &th, Events: evs}); err != nil {
		t.Fatal(err)
	}
	if err := crashed.Commit(ctx, store.Batch{Thread: &chat.Thread{ID: "t2", Agent: "a", Cwd: "/w", Title: "Seal colony", LastSeq: 1},
		Events: []chat.Event{ev(t, "t2", 1, chat.UserMessage{MessageID: "m2", Text: "count the seals"})}}); err != nil {
		t.Fatal(err)
	}
	crashed.Close()

	s = open(t, path)
	wantHits(t, s, "pinniped", "t1/title/0")
	wantHits(t, s, `"old name"`)
	wantHits(t, s, "walruses", "t1/user/1", "t1/agent/2")
	wantHits(t, s, "whiskers", "t1/agent/2")
	wantHits(t, s, strings.Repeat("tusk", 20), "t1/agent/2") // cut at maxCarry, not at the transactions
	wantHits(t, s, "seals", "t2/user/1")
	wantHits(t, s, "colony", "t2/title/0")
	var through int64
	if err := s.r.QueryRowContext(ctx, `SELECT through FROM search_done WHERE thread = 't1'`).Scan(&through); err != nil || through != chunks+1 {
		t.Errorf("t1 indexed through %d (%v), want %d", through, err, chunks+1)
	}
}

// TestSearchAfterAnAnswerPastItsBudget: the chunks of an answer past its
// budget (maxIndexed) are not read back for indexing, and what follows it in the same
// indexing round (a person's message, the next answer) is still found.
func TestSearchAfterAnAnswerPastItsBudget(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := open(t, filepath.Join(t.TempDir(), "parley.db"))
	th := chat.Thread{ID: "t1", Agent: "a", Cwd: "/w", LastSeq: 1}
	filler := strings.Repeat("ééééé ", maxIndexed/10) // 1.1 MB: past the budget at once
	if err := s.Commit(ctx, store.Batch{Thread: &th, Events: []chat.Event{ev(t, "t1", 1, chat.AgentChunk{Text: "aardvark " + filler})}}); err != nil {
		t.Fatal(err)
	}
	wantHits(t, s, "aardvark", "t1/agent/1")
	evs := []chat.Event{}
	for seq := int64(2); seq <= 10; seq++ {
		evs = append(evs, ev(t, "t1", seq, chat.AgentChunk{Text: "zebra " + filler[:9999]}))
	}
	evs = append(evs,
		ev(t, "t1", 11, chat.PromptDone{StopReason: chat.StopEndTurn}),
		ev(t, "t1", 12, chat.UserMessage{MessageID: "m2", Text: "and the walrus?"}),
		ev(t, "t1", 13, chat.AgentChunk{Text: "A narwhal"}),
		ev(t, "t1", 14, chat.AgentChunk{Text: " swims by."}),
		ev(t, "t1", 15, chat.PromptDone{StopReason: chat.StopEndTurn}))
	if err := s.Commit(ctx, store.Batch{Events: evs}); err != nil {
		t.Fatal(err)
	}
	wantHits(t, s, "zebra")
	wantHits(t, s, "walrus", "t1/user/12")
	wantHits(t, s, "narwhal swims", "t1/agent/13")
	var through int64
	if err := s.r.QueryRowContext(ctx, `SELECT through FROM search_done WHERE thread = 't1'`).Scan(&through); err != nil || through != 15 {
		t.Errorf("indexed through %d (%v), want 15", through, err)
	}
}
