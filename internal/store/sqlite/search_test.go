package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/store"
)

func ev(t testing.TB, thread chat.ThreadID, seq int64, p chat.Payload) chat.Event {
	t.Helper()
	e, err := chat.NewEvent(thread, p, time.Unix(1_700_000_000+seq, 0))
	if err != nil {
		t.Fatal(err)
	}
	e.Seq = seq
	return e
}

// where lists the hits of a search as "thread/kind/seq".
func where(t *testing.T, s *Store, q string) []string {
	t.Helper()
	hits, err := s.Search(t.Context(), q, 0)
	if err != nil {
		t.Fatalf("Search(%q): %v", q, err)
	}
	var out []string
	for _, h := range hits {
		out = append(out, string(h.Thread)+"/"+h.Kind+"/"+itoa(h.Seq))
	}
	return out
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// wantHits compares the places a search finds, in any order (ranks are FTS5's).
func wantHits(t *testing.T, s *Store, q string, want ...string) {
	t.Helper()
	got := where(t, s, q)
	slices.Sort(got)
	want = slices.Clone(want)
	slices.Sort(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("Search(%q): got %v, want %v", q, got, want)
	}
}

// TestSearchBuiltForAStoreWrittenBefore: opening a schema 4 store with
// threads and messages builds their search rows: titles, a person's
// messages, and an answer whose word was split across two chunks.
func TestSearchBuiltForAStoreWrittenBefore(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "parley.db")
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	db := raw(t, path)
	if _, err := db.ExecContext(ctx, `CREATE TABLE schema_migrations (version INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if migrationSteps[m.version] != nil {
			break // every schema before search's
		}
		if _, err := db.ExecContext(ctx, m.sql); err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO schema_migrations VALUES (?, ?, 0)`, m.version, m.name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO threads VALUES ('t1', 'a', '/w', '', 'Fix the flaky harbour test', 'unloaded', '', 0, 0, 6, ''),
		('t2', 'a', '/w', '', '', 'unloaded', '', 0, 0, 0, '')`); err != nil {
		t.Fatal(err)
	}
	for _, e := range []chat.Event{
		ev(t, "t1", 1, chat.UserMessage{MessageID: "m1", Text: "why does the lighthouse job fail?"}),
		ev(t, "t1", 2, chat.AgentChunk{Text: "Because the depl"}),
		ev(t, "t1", 3, chat.AgentChunk{Text: "oyment script"}),
		ev(t, "t1", 4, chat.ToolCall{ToolCallID: "c1", Title: "read"}),
		ev(t, "t1", 5, chat.AgentChunk{Text: "times out on marmalade."}),
		ev(t, "t1", 6, chat.PromptDone{StopReason: chat.StopEndTurn}),
	} {
		if _, err := db.ExecContext(ctx, `INSERT INTO events VALUES (?, ?, ?, 0, ?)`, string(e.Thread), e.Seq, e.Type, e.Payload); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	s := open(t, path)
	wantHits(t, s, "harbour", "t1/title/0")
	wantHits(t, s, "lighthouse", "t1/user/1")
	wantHits(t, s, "deployment", "t1/agent/2")
	wantHits(t, s, "marmalade", "t1/agent/5")
	wantHits(t, s, `"because the deployment"`, "t1/agent/2")
	wantHits(t, s, "nowhere")
}

// TestSearchKeptInStep: what Commit writes is found at once (an answer
// streamed over several commits is one hit at its first chunk; the word a
// commit ends inside is found with the next one), a new title
// replaces the old one, pruned messages and deleted threads are gone, and an
// archived thread is still found, marked so.
func TestSearchKeptInStep(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := open(t, filepath.Join(t.TempDir(), "parley.db"))
	th := chat.Thread{ID: "t1", Agent: "a", Cwd: "/w", State: chat.ThreadIdle, Title: "Quarterly otter census", LastSeq: 2}
	commit := func(b store.Batch) {
		t.Helper()
		if err := s.Commit(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	commit(store.Batch{Thread: &th, Events: []chat.Event{
		ev(t, "t1", 1, chat.UserMessage{MessageID: "m1", Text: "count the otters in the estuary"}),
		ev(t, "t1", 2, chat.AgentChunk{Text: "I found twelve"}),
	}})
	wantHits(t, s, "otter", "t1/title/0", "t1/user/1")
	wantHits(t, s, "found", "t1/agent/2")
	// The answer goes on in the next commits: still one hit, at seq 2, and
	// "twelve", held back, is whole with what follows.
	commit(store.Batch{Events: []chat.Event{ev(t, "t1", 3, chat.AgentChunk{Text: "ty sleepy "})}})
	commit(store.Batch{Events: []chat.Event{ev(t, "t1", 4, chat.AgentChunk{Text: "badgers"}), ev(t, "t1", 5, chat.PromptDone{StopReason: chat.StopEndTurn})}})
	wantHits(t, s, "twelvety", "t1/agent/2")
	wantHits(t, s, `"twelvety sleepy"`, "t1/agent/2")
	wantHits(t, s, "badgers", "t1/agent/2")
	wantHits(t, s, `"twelve"`)
	// After the turn, another answer is its own hit.
	commit(store.Batch{Events: []chat.Event{ev(t, "t1", 6, chat.UserMessage{MessageID: "m2", Text: "and badgers?"}), ev(t, "t1", 7, chat.AgentChunk{Text: "badgers: none"})}})
	wantHits(t, s, "badgers", "t1/user/6", "t1/agent/7", "t1/agent/2")
	wantHits(t, s, "none") // held back: the answer may go on
	commit(store.Batch{Events: []chat.Event{ev(t, "t1", 8, chat.PromptDone{StopReason: chat.StopEndTurn})}})
	wantHits(t, s, "none", "t1/agent/7")

	th.Title, th.Archived, th.LastSeq = "Estuary survey", true, 8
	commit(store.Batch{Thread: &th})
	wantHits(t, s, "quarterly")
	hits, err := s.Search(ctx, "estuary survey", 0)
	if err != nil || len(hits) != 1 || hits[0].Kind != "title" || !hits[0].Archived || hits[0].Title != "Estuary survey" {
		t.Errorf("Search(estuary survey) after the rename and archive: got %+v, %v; want the title, archived", hits, err)
	}
	if got, err := s.Thread(ctx, "t1"); err != nil || !got.Archived {
		t.Errorf("Thread after archiving: got %+v, %v", got, err)
	}

	// Prune the first turn (events up to seq 5): its messages are no longer found.
	if _, err := s.w.ExecContext(ctx, `UPDATE events SET ts = ? WHERE seq <= 5`, nanos(time.Unix(1, 0))); err != nil {
		t.Fatal(err)
	}
	th.State = chat.ThreadUnloaded
	commit(store.Batch{Thread: &th})
	if n, err := s.PruneEvents(ctx, time.Unix(2, 0)); err != nil || n != 5 {
		t.Fatalf("PruneEvents: %d, %v; want 5", n, err)
	}
	wantHits(t, s, "badgers", "t1/user/6", "t1/agent/7")
	wantHits(t, s, "otters")

	if err := s.DeleteThread(ctx, "t1"); err != nil {
		t.Fatalf("DeleteThread: %v", err)
	}
	wantHits(t, s, "badgers")
	wantHits(t, s, "estuary")
	if _, err := s.Thread(ctx, "t1"); !errors.Is(err, chat.ErrNotFound) {
		t.Errorf("Thread after delete: %v, want not found", err)
	}
	if evs, _ := s.Events(ctx, "t1", 0, 0); len(evs) != 0 {
		t.Errorf("events after delete: %d left", len(evs))
	}
	if err := s.DeleteThread(ctx, "t1"); !errors.Is(err, chat.ErrNotFound) {
		t.Errorf("DeleteThread twice: %v, want not found", err)
	}
	var left int
	if err := s.r.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM search_rows) + (SELECT COUNT(*) FROM search_text) + (SELECT COUNT(*) FROM search_open)`).Scan(&left); err != nil || left != 0 {
		t.Errorf("search rows after delete: %d, %v", left, err)
	}
}

// TestSearchIndexesAnAnswersFirstMiB: a streamed answer of megabytes costs
// its first MiB of indexing (and the overlaps), however many commits it takes.
func TestSearchIndexesAnAnswersFirstMiB(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := open(t, filepath.Join(t.TempDir(), "parley.db"))
	th := chat.Thread{ID: "t1", Agent: "a", Cwd: "/w", LastSeq: 1}
	if err := s.Commit(ctx, store.Batch{Thread: &th, Events: []chat.Event{ev(t, "t1", 1, chat.AgentChunk{Text: "aardvark é"})}}); err != nil {
		t.Fatal(err)
	}
	filler := strings.Repeat("ééééé ", 10000) // 110 KB
	const commits = 11
	for seq := int64(2); seq <= commits+1; seq++ {
		if err := s.Commit(ctx, store.Batch{Events: []chat.Event{ev(t, "t1", seq, chat.AgentChunk{Text: filler})}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Commit(ctx, store.Batch{Events: []chat.Event{ev(t, "t1", commits+2, chat.AgentChunk{Text: " zebra"}), ev(t, "t1", commits+3, chat.PromptDone{})}}); err != nil {
		t.Fatal(err)
	}
	wantHits(t, s, "aardvark", "t1/agent/1")
	wantHits(t, s, "zebra")
	var n int64
	if err := s.r.QueryRowContext(ctx, `SELECT SUM(LENGTH(CAST(text AS BLOB))) FROM search_text`).Scan(&n); err != nil || n > maxIndexed+(commits+2)*maxOverlap {
		t.Errorf("indexed %d bytes (%v); want at most %d and the overlaps", n, err, maxIndexed)
	}
}

// TestSearchFindsAPhraseSplitAcrossCommits: an answer streamed in several
// commits is found by a phrase whose words two commits wrote, a message's
// words past 64 KiB are found, and a word is one hit, not one per row.
func TestSearchFindsAPhraseSplitAcrossCommits(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := open(t, filepath.Join(t.TempDir(), "parley.db"))
	th := chat.Thread{ID: "t1", Agent: "a", Cwd: "/w", LastSeq: 2}
	long := strings.Repeat("filler words here ", 5000) + "the heron at the weir" // 90 KB
	commit := func(b store.Batch) {
		t.Helper()
		if err := s.Commit(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	commit(store.Batch{Thread: &th, Events: []chat.Event{
		ev(t, "t1", 1, chat.UserMessage{MessageID: "m1", Text: long}),
		ev(t, "t1", 2, chat.AgentChunk{Text: "The quick brown "}),
	}})
	commit(store.Batch{Events: []chat.Event{ev(t, "t1", 3, chat.AgentChunk{Text: "fox jumps over"})}})
	commit(store.Batch{Events: []chat.Event{ev(t, "t1", 4, chat.AgentChunk{Text: " the lazy dog, "})}})
	commit(store.Batch{Events: []chat.Event{ev(t, "t1", 5, chat.AgentChunk{Text: "twice."}), ev(t, "t1", 6, chat.PromptDone{StopReason: chat.StopEndTurn})}})
	wantHits(t, s, `"quick brown fox jumps over the lazy dog twice"`, "t1/agent/2")
	wantHits(t, s, `"brown fox"`, "t1/agent/2")
	wantHits(t, s, `"over the lazy"`, "t1/agent/2")
	wantHits(t, s, "jumps", "t1/agent/2")
	wantHits(t, s, `"heron at the weir"`, "t1/user/1")
	wantHits(t, s, `"brown dog"`)
}

func TestLastWords(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		text string
		n    int
		want string
	}{
		{"one two three four ", 2, "three four "},
		{"one two ", 5, "one two "},
		{"  ", 3, "  "},
		{"é à ü, ", 2, "à ü, "},
	} {
		if got := lastWords(c.text, c.n, maxOverlap); got != c.want {
			t.Errorf("lastWords(%q, %d) = %q, want %q", c.text, c.n, got, c.want)
		}
	}
	if got := lastWords("abcdefgh ijk ", 3, 6); got != " ijk " {
		t.Errorf("lastWords within 6 bytes = %q, want the whole words that fit", got)
	}
}

func TestSearchRefusesNoWords(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "parley.db"))
	for _, q := range []string{"", "   ", `"`, `""`, "* ( ) :", strings.Repeat("a", MaxSearchQuery+1), strings.Repeat("a ", maxSearchTerms+1)} {
		if _, err := s.Search(t.Context(), q, 0); !errors.Is(err, chat.ErrBadInput) {
			t.Errorf("Search(%.40q): %v, want bad input", q, err)
		}
	}
}

// FuzzSearch: whatever a person types, the search runs or says what is
// wrong with it (bad input); FTS5 never sees syntax it refuses.
func FuzzSearch(f *testing.F) {
	for _, q := range []string{"otter", `"a b"`, `a" OR b`, "NEAR(a b)", "a:b", "^a", "a*", "-a", "a AND", `"unclosed`, "é", "\x00", "col:*", "a'b", "(", ")", "{a}", "+"} {
		f.Add(q)
	}
	s := open(f, filepath.Join(f.TempDir(), "parley.db"))
	th := chat.Thread{ID: "t1", Agent: "a", Cwd: "/w", Title: "an otter", LastSeq: 1}
	if err := s.Commit(context.Background(), store.Batch{Thread: &th, Events: []chat.Event{ev(f, "t1", 1, chat.UserMessage{MessageID: "m", Text: "otters and a b c"})}}); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, q string) {
		_, err := s.Search(context.Background(), q, 5)
		if err != nil && !errors.Is(err, chat.ErrBadInput) {
			t.Fatalf("Search(%q): %v", q, err)
		}
		if err != nil && strings.Contains(err.Error(), "could not be read") {
			t.Fatalf("Search(%q) reached FTS5 with bad syntax: %v", q, err)
		}
	})
}
