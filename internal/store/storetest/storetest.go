// Package storetest is the conformance suite every store.Store implementation
// runs from its own tests (SQLite now, PostgreSQL later), so they keep one meaning.
//
// Its fixture times have millisecond precision, the least the interface promises;
// an implementation that keeps more checks that in its own tests. JSON payloads
// must come back byte for byte (a jsonb column that reformats them fails).
package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/store"
)

// Opener opens the database called name, creating it empty the first time.
// Opening the same name again after Close opens the same database: that is how the
// suite checks that nothing is lost across a restart. Names are unique per test and
// made of [a-z0-9_]. The suite closes every store it opens.
type Opener func(t *testing.T, name string) store.Store

// Run runs the whole suite against open.
func Run(t *testing.T, open Opener) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, Opener)
	}{
		{"ThreadRoundTrip", testThreadRoundTrip},
		{"ThreadGit", testThreadGit},
		{"ThreadsNewestFirst", testThreadsNewestFirst},
		{"NotFound", testNotFound},
		{"EventRoundTrip", testEventRoundTrip},
		{"EventsSinceLimit", testEventsSinceLimit},
		{"Tail", testTail},
		{"CommitAtomic", testCommitAtomic},
		{"CommitRejectsBadRows", testCommitRejectsBadRows},
		{"Cards", testCards},
		{"Inputs", testInputs},
		{"Routes", testRoutes},
		{"RemoteRoutes", testRemoteRoutes},
		{"RouteAsks", testRouteAsks},
		{"FailedRemotes", testFailedRemotes},
		{"ThreadAsks", testThreadAsks},
		{"Attachments", testAttachments},
		{"Reopen", testReopen},
		{"ConcurrentCommits", testConcurrentCommits},
		{"PruneEvents", testPruneEvents},
		{"Usage", testUsage},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open) })
	}
}

// dbName turns a test name into a database name the Opener accepts.
func dbName(t *testing.T) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		}
		return '_'
	}, t.Name())
}

// openNamed opens a database and closes it when the test ends.
func openNamed(t *testing.T, open Opener, name string) store.Store {
	t.Helper()
	s := open(t, name)
	if s == nil {
		t.Fatalf("open %s: got a nil store", name)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func fresh(t *testing.T, open Opener) store.Store {
	t.Helper()
	return openNamed(t, open, dbName(t))
}

// base is a fixture time outside UTC, with milliseconds.
var base = time.Date(2026, 12, 2, 18, 4, 5, 678_000_000, time.FixedZone("CET", 3600))

func at(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }

func thread(id string, updated time.Time) chat.Thread {
	return chat.Thread{
		ID:            chat.ThreadID(id),
		Agent:         "claude",
		Cwd:           "/home/ada/src/" + id,
		SessionID:     "sess-" + id,
		Title:         "Fix the flaky test in " + id + " — ünïcode ✓",
		State:         chat.ThreadWorking,
		Mode:          "plan",
		CreatedAt:     at(0),
		UpdatedAt:     updated,
		LastSeq:       0,
		TurnMessageID: "m-" + id,
	}
}

func event(thread chat.ThreadID, seq int64) chat.Event {
	return chat.Event{
		Type:    chat.TypeAgentChunk,
		Thread:  thread,
		Seq:     seq,
		TS:      at(int(seq)),
		Payload: json.RawMessage(fmt.Sprintf(`{"text":"chunk %d of %s","message_id":"a-%d"}`, seq, thread, seq)),
	}
}

func events(thread chat.ThreadID, from, to int64) []chat.Event {
	var evs []chat.Event
	for s := from; s <= to; s++ {
		evs = append(evs, event(thread, s))
	}
	return evs
}

// mustCommit commits a thread (with LastSeq set to its last event) and events.
func mustCommit(t *testing.T, s store.Store, b store.Batch) {
	t.Helper()
	if err := s.Commit(t.Context(), b); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

func seedThread(t *testing.T, s store.Store, id string, n int64) chat.Thread {
	t.Helper()
	th := thread(id, at(int(n)))
	th.LastSeq = n
	mustCommit(t, s, store.Batch{Thread: &th, Events: events(th.ID, 1, n)})
	return th
}

// utc normalises every time.Time inside v to UTC (the stores read times back in UTC),
// so reflect.DeepEqual compares instants.
func utc[T any](v T) T {
	rv := reflect.ValueOf(&v).Elem()
	normalise(rv)
	return v
}

func normalise(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(v.Interface().(time.Time).UTC()))
			return
		}
		for i := range v.NumField() {
			if v.Field(i).CanSet() {
				normalise(v.Field(i))
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return
		}
		for i := range v.Len() {
			normalise(v.Index(i))
		}
	}
}

// show renders a value for a failure message, JSON payloads as text.
func show(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(b)
}

func check[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	want = utc(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\ngot  %s\nwant %s", what, show(got), show(want))
	}
}

// checkUTC asserts that times come back in UTC, as the interface's stores promise.
func checkUTC(t *testing.T, what string, ts ...time.Time) {
	t.Helper()
	for _, x := range ts {
		if !x.IsZero() && x.Location() != time.UTC {
			t.Errorf("%s: got time in %v, want UTC", what, x.Location())
		}
	}
}

func seqs(evs []chat.Event) []int64 {
	out := []int64{}
	for _, e := range evs {
		out = append(out, e.Seq)
	}
	return out
}

func span(from, to int64) []int64 {
	out := []int64{}
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

func testThreadRoundTrip(t *testing.T, open Opener) {
	s := fresh(t, open)
	ctx := t.Context()
	th := thread("t1", at(10))
	th.LastSeq = 7 // a thread row may run ahead of the events a test wrote
	mustCommit(t, s, store.Batch{Thread: &th})

	got, err := s.Thread(ctx, th.ID)
	if err != nil {
		t.Fatalf("Thread: %v", err)
	}
	check(t, "Thread after insert", got, th)
	checkUTC(t, "Thread", got.CreatedAt, got.UpdatedAt)

	// Every field changes, including to empty values.
	th2 := chat.Thread{ID: th.ID, Agent: "gemini", Cwd: "/tmp", SessionID: "", Title: "",
		State: chat.ThreadIdle, Mode: "", CreatedAt: at(1), UpdatedAt: at(20), LastSeq: 9, TurnMessageID: ""}
	mustCommit(t, s, store.Batch{Thread: &th2})
	got, err = s.Thread(ctx, th.ID)
	if err != nil {
		t.Fatalf("Thread: %v", err)
	}
	check(t, "Thread after update", got, th2)

	// The zero time survives as the zero time.
	th3 := th2
	th3.CreatedAt, th3.UpdatedAt = time.Time{}, time.Time{}
	mustCommit(t, s, store.Batch{Thread: &th3})
	got, err = s.Thread(ctx, th.ID)
	if err != nil {
		t.Fatalf("Thread: %v", err)
	}
	check(t, "Thread with zero times", got, th3)
}

// testThreadGit: a thread's git base and worktree are kept from its start,
// whatever a later write of the thread carries.
func testThreadGit(t *testing.T, open Opener) {
	s := fresh(t, open)
	th := thread("t1", at(10))
	th.GitBase, th.Worktree = "0123456789abcdef0123456789abcdef01234567", "/repo.parley-worktrees/fix-abc"
	mustCommit(t, s, store.Batch{Thread: &th})
	got, err := s.Thread(t.Context(), th.ID)
	if err != nil {
		t.Fatalf("Thread: %v", err)
	}
	check(t, "Thread with git", got, th)
	later := th
	later.GitBase, later.Worktree, later.Title = "", "", "renamed"
	mustCommit(t, s, store.Batch{Thread: &later})
	got, err = s.Thread(t.Context(), th.ID)
	if err != nil {
		t.Fatalf("Thread: %v", err)
	}
	if got.GitBase != th.GitBase || got.Worktree != th.Worktree || got.Title != "renamed" {
		t.Fatalf("after a later write: base %q worktree %q title %q", got.GitBase, got.Worktree, got.Title)
	}
}

func testThreadsNewestFirst(t *testing.T, open Opener) {
	s := fresh(t, open)
	ctx := t.Context()
	if got, err := s.Threads(ctx); err != nil || len(got) != 0 {
		t.Fatalf("Threads on an empty store: got %d threads, %v; want none, nil", len(got), err)
	}
	for _, x := range []struct {
		id      string
		updated int
	}{{"a", 300}, {"b", 100}, {"c", 200}} {
		th := thread(x.id, at(x.updated))
		mustCommit(t, s, store.Batch{Thread: &th})
	}
	ids := func() []chat.ThreadID {
		t.Helper()
		ts, err := s.Threads(ctx)
		if err != nil {
			t.Fatalf("Threads: %v", err)
		}
		var out []chat.ThreadID
		for _, th := range ts {
			out = append(out, th.ID)
		}
		return out
	}
	if got, want := ids(), []chat.ThreadID{"a", "c", "b"}; !slices.Equal(got, want) {
		t.Errorf("Threads order: got %v, want %v", got, want)
	}
	// Activity on the oldest thread moves it to the front.
	b := thread("b", at(400))
	mustCommit(t, s, store.Batch{Thread: &b})
	if got, want := ids(), []chat.ThreadID{"b", "a", "c"}; !slices.Equal(got, want) {
		t.Errorf("Threads order after activity on b: got %v, want %v", got, want)
	}
	ts, err := s.Threads(ctx)
	if err != nil {
		t.Fatalf("Threads: %v", err)
	}
	check(t, "Threads()[0]", ts[0], b)
}

func testNotFound(t *testing.T, open Opener) {
	s := fresh(t, open)
	ctx := t.Context()
	seedThread(t, s, "known", 2)
	mustCommit(t, s, store.Batch{Inputs: []chat.Input{{MessageID: "m1", ThreadID: "known", State: chat.DeliveryQueued}}})
	if err := s.AttachRoute(ctx, chat.RouteKey{Channel: "web", Chat: "c1"}, "known"); err != nil {
		t.Fatalf("AttachRoute: %v", err)
	}

	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"Thread", func() error { _, err := s.Thread(ctx, "nope"); return err }},
		{"Route unknown chat", func() error { _, err := s.Route(ctx, chat.RouteKey{Channel: "web", Chat: "c2"}); return err }},
		{"Route unknown channel", func() error { _, err := s.Route(ctx, chat.RouteKey{Channel: "tui", Chat: "c1"}); return err }},
		{"Input", func() error { _, err := s.Input(ctx, chat.RouteKey{}, "m2"); return err }},
		{"Input from another route", func() error { _, err := s.Input(ctx, chat.RouteKey{Channel: "web", Chat: "c1"}, "m1"); return err }},
		{"AttachRoute to unknown thread", func() error {
			return s.AttachRoute(ctx, chat.RouteKey{Channel: "web", Chat: "c3"}, "nope")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); !errors.Is(err, chat.ErrNotFound) {
				t.Errorf("got error %v, want one wrapping chat.ErrNotFound", err)
			}
		})
	}
	// A failed attach creates nothing.
	if _, err := s.Route(ctx, chat.RouteKey{Channel: "web", Chat: "c3"}); !errors.Is(err, chat.ErrNotFound) {
		t.Errorf("Route after a refused attach: got %v, want chat.ErrNotFound", err)
	}

	// Lists of an unknown thread are empty, not errors.
	for _, tc := range []struct {
		name string
		call func() (int, error)
	}{
		{"Events", func() (int, error) { e, err := s.Events(ctx, "nope", 0, 0); return len(e), err }},
		{"Tail", func() (int, error) { e, err := s.Tail(ctx, "nope", 10); return len(e), err }},
		{"Cards", func() (int, error) { c, err := s.Cards(ctx, "nope", ""); return len(c), err }},
	} {
		t.Run(tc.name+" of unknown thread", func(t *testing.T) {
			n, err := tc.call()
			if err != nil || n != 0 {
				t.Errorf("got %d rows, %v; want 0 rows, nil", n, err)
			}
		})
	}
}

func testEventRoundTrip(t *testing.T, open Opener) {
	s := fresh(t, open)
	ctx := t.Context()
	th := thread("t1", at(0))
	big := `{"text":"` + strings.Repeat("x", 256<<10) + `"}`
	payloads := []struct{ typ, payload string }{
		{chat.TypeUserMessage, `{"message_id":"m1","text":"hello","from":{"channel":"web","chat":"c1"}}`},
		{chat.TypeAgentChunk, `{"text":"ünïcode ✓ \u0000 \"quoted\" \n newline"}`},
		{chat.TypeToolCall, `{"tool_call_id":"tc1","title":"Read","kind":"read","status":"pending","input":{"path":"/a","nested":[1,2,{"x":null}]}}`},
		{chat.TypePromptDone, `{ "stop_reason" : "end_turn" }`}, // whitespace kept as written
		{"future_type", `{}`}, // a type this build does not know
		{chat.TypeAgentChunk, big},
	}
	var want []chat.Event
	for i, p := range payloads {
		want = append(want, chat.Event{Type: p.typ, Thread: th.ID, Seq: int64(i + 1),
			TS: at(1000 + i), Payload: json.RawMessage(p.payload)})
	}
	th.LastSeq = int64(len(want))
	mustCommit(t, s, store.Batch{Thread: &th, Events: want})

	got, err := s.Events(ctx, th.ID, 0, 0)
	if err != nil {
		t.Fatalf("Events: %v", err)
	}
	if len(got) != len(want) {
		t.Fatalf("Events: got %d events, want %d", len(got), len(want))
	}
	for i := range want {
		if i == len(want)-1 {
			// Too big to print on failure.
			if string(got[i].Payload) != big {
				t.Errorf("event %d: the %d-byte payload came back as %d bytes", i+1, len(big), len(got[i].Payload))
			}
			got[i].Payload, want[i].Payload = nil, nil
		}
		check(t, fmt.Sprintf("event %d", i+1), got[i], want[i])
		checkUTC(t, "event ts", got[i].TS)
	}
}

func testEventsSinceLimit(t *testing.T, open Opener) {
	s := fresh(t, open)
	ctx := t.Context()
	seedThread(t, s, "t1", 10)
	seedThread(t, s, "t2", 3) // another thread's events never leak in

	for _, tc := range []struct {
		name         string
		since        int64
		limit        int
		wantFrom, to int64 // want seqs wantFrom..to; to < wantFrom means none
	}{
		{"all", 0, 0, 1, 10},
		{"negative since is all", -5, 0, 1, 10},
		{"negative limit is no limit", 0, -1, 1, 10},
		{"since middle", 3, 0, 4, 10},
		{"since middle with limit", 3, 2, 4, 5},
		{"limit 1", 0, 1, 1, 1},
		{"limit exact", 0, 10, 1, 10},
		{"limit beyond end", 7, 100, 8, 10},
		{"since last", 10, 0, 1, 0},
		{"since beyond last", 11, 5, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Events(ctx, "t1", tc.since, tc.limit)
			if err != nil {
				t.Fatalf("Events: %v", err)
			}
			if g, w := seqs(got), span(tc.wantFrom, tc.to); !slices.Equal(g, w) {
				t.Fatalf("Events(since %d, limit %d): got seqs %v, want %v", tc.since, tc.limit, g, w)
			}
			for _, e := range got {
				check(t, fmt.Sprintf("event %d", e.Seq), e, event("t1", e.Seq))
			}
		})
	}
}

func testTail(t *testing.T, open Opener) {
	s := fresh(t, open)
	ctx := t.Context()
	seedThread(t, s, "t1", 10)
	seedThread(t, s, "t2", 3)

	for _, tc := range []struct {
		name         string
		n            int
		wantFrom, to int64
	}{
		{"zero", 0, 1, 0},
		{"negative", -1, 1, 0},
		{"one", 1, 10, 10},
		{"some", 3, 8, 10},
		{"exact", 10, 1, 10},
		{"more than there are", 500, 1, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Tail(ctx, "t1", tc.n)
			if err != nil {
				t.Fatalf("Tail: %v", err)
			}
			if g, w := seqs(got), span(tc.wantFrom, tc.to); !slices.Equal(g, w) {
				t.Fatalf("Tail(%d): got seqs %v, want %v", tc.n, g, w)
			}
			for _, e := range got {
				check(t, fmt.Sprintf("event %d", e.Seq), e, event("t1", e.Seq))
			}
		})
	}
}

func testCommitAtomic(t *testing.T, open Opener) {
	for _, tc := range []struct {
		name   string
		events []chat.Event
	}{
		{"seq already stored", []chat.Event{event("t1", 4), event("t1", 5), event("t1", 2)}},
		{"seq repeated in the batch", []chat.Event{event("t1", 4), event("t1", 5), event("t1", 4)}},
		{"event of a thread that does not exist", []chat.Event{event("t1", 4), event("ghost", 1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := fresh(t, open)
			ctx := t.Context()
			th := seedThread(t, s, "t1", 3)

			changed := th
			changed.Title, changed.LastSeq, changed.UpdatedAt = "changed", 5, at(999)
			card := chat.Card{ThreadID: th.ID, RequestID: "r1", Kind: chat.CardPermission, State: chat.CardOpen,
				Request: json.RawMessage(`{"request_id":"r1"}`), CreatedAt: at(5)}
			in := chat.Input{MessageID: "m1", ThreadID: th.ID, From: chat.RouteKey{Channel: "web", Chat: "c"},
				Text: "hi", State: chat.DeliveryQueued, AcceptedAt: at(5)}
			err := s.Commit(ctx, store.Batch{Thread: &changed, Events: tc.events,
				Cards: []chat.Card{card}, Inputs: []chat.Input{in}})
			if err == nil {
				t.Fatal("Commit of a bad batch: got nil error, want one")
			}

			// Nothing of the batch is visible.
			got, err := s.Thread(ctx, th.ID)
			if err != nil {
				t.Fatalf("Thread: %v", err)
			}
			check(t, "thread after the failed commit", got, th)
			evs, err := s.Events(ctx, th.ID, 0, 0)
			if err != nil {
				t.Fatalf("Events: %v", err)
			}
			if g, w := seqs(evs), span(1, 3); !slices.Equal(g, w) {
				t.Errorf("events after the failed commit: got seqs %v, want %v", g, w)
			}
			if cs, err := s.Cards(ctx, th.ID, ""); err != nil || len(cs) != 0 {
				t.Errorf("cards after the failed commit: got %d, %v; want none", len(cs), err)
			}
			if _, err := s.Input(ctx, in.From, "m1"); !errors.Is(err, chat.ErrNotFound) {
				t.Errorf("input after the failed commit: got %v, want chat.ErrNotFound", err)
			}
			if p, err := s.PendingInputs(ctx); err != nil || len(p) != 0 {
				t.Errorf("pending inputs after the failed commit: got %d, %v; want none", len(p), err)
			}

			// The store is not wedged: the corrected batch goes through.
			mustCommit(t, s, store.Batch{Thread: &changed, Events: events(th.ID, 4, 5),
				Cards: []chat.Card{card}, Inputs: []chat.Input{in}})
			evs, err = s.Events(ctx, th.ID, 0, 0)
			if err != nil {
				t.Fatalf("Events: %v", err)
			}
			if g, w := seqs(evs), span(1, 5); !slices.Equal(g, w) {
				t.Errorf("events after the corrected commit: got seqs %v, want %v", g, w)
			}
		})
	}
}

func testCommitRejectsBadRows(t *testing.T, open Opener) {
	s := fresh(t, open)
	ctx := t.Context()
	seedThread(t, s, "t1", 1)
	if err := s.Commit(ctx, store.Batch{}); err != nil {
		t.Errorf("Commit of an empty batch: got %v, want nil", err)
	}
	for _, tc := range []struct {
		name string
		b    store.Batch
	}{
		{"thread without id", store.Batch{Thread: &chat.Thread{Agent: "claude"}}},
		{"event without thread", store.Batch{Events: []chat.Event{{Type: chat.TypeAgentChunk, Seq: 2, Payload: json.RawMessage(`{}`)}}}},
		{"event without seq", store.Batch{Events: []chat.Event{{Type: chat.TypeAgentChunk, Thread: "t1", Payload: json.RawMessage(`{}`)}}}},
		{"card without request id", store.Batch{Cards: []chat.Card{{ThreadID: "t1", Kind: chat.CardQuestion, State: chat.CardOpen}}}},
		{"input without message id", store.Batch{Inputs: []chat.Input{{ThreadID: "t1", State: chat.DeliveryQueued}}}},
		{"input of unknown thread", store.Batch{Inputs: []chat.Input{{MessageID: "m", ThreadID: "ghost", State: chat.DeliveryQueued}}}},
		{"card of unknown thread", store.Batch{Cards: []chat.Card{{ThreadID: "ghost", RequestID: "r", Kind: chat.CardQuestion, State: chat.CardOpen}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.Commit(ctx, tc.b); err == nil {
				t.Error("got nil error, want one")
			}
		})
	}
	evs, err := s.Events(ctx, "t1", 0, 0)
	if err != nil || !slices.Equal(seqs(evs), []int64{1}) {
		t.Errorf("events after refused commits: got %v, %v; want [1]", seqs(evs), err)
	}
}

func testCards(t *testing.T, open Opener) {
	s := fresh(t, open)
	ctx := t.Context()
	seedThread(t, s, "t1", 1)
	seedThread(t, s, "t2", 1)

	perm := chat.Card{ThreadID: "t1", RequestID: "r-perm", Kind: chat.CardPermission, State: chat.CardOpen,
		Request:       json.RawMessage(`{"request_id":"r-perm","tool":{"name":"Bash","title":"rm -rf build"},"options":[{"id":"a","label":"Allow","kind":"allow_once"}]}`),
		TurnMessageID: "m1", CreatedAt: at(30)}
	quest := chat.Card{ThreadID: "t1", RequestID: "r-q", Kind: chat.CardQuestion, State: chat.CardOpen,
		Request: json.RawMessage(`{"request_id":"r-q","questions":[]}`), TurnMessageID: "m1", CreatedAt: at(10)}
	done := chat.Card{ThreadID: "t1", RequestID: "r-old", Kind: chat.CardPermission, State: chat.CardCancelled,
		Request: json.RawMessage(`{"request_id":"r-old"}`), Resolution: json.RawMessage(`{"request_id":"r-old","cancelled":true}`),
		CreatedAt: at(5), ResolvedAt: at(6)}
	other := chat.Card{ThreadID: "t2", RequestID: "r-perm", Kind: chat.CardPermission, State: chat.CardOpen,
		Request: json.RawMessage(`{"request_id":"r-perm","other":true}`), CreatedAt: at(1)}
	mustCommit(t, s, store.Batch{Cards: []chat.Card{perm, quest, done, other}})

	list := func(thread chat.ThreadID, state string) []chat.Card {
		t.Helper()
		cs, err := s.Cards(ctx, thread, state)
		if err != nil {
			t.Fatalf("Cards(%s, %q): %v", thread, state, err)
		}
		for _, c := range cs {
			checkUTC(t, "card times", c.CreatedAt, c.ResolvedAt)
		}
		return cs
	}
	for _, tc := range []struct {
		thread chat.ThreadID
		state  string
		want   []chat.Card
	}{
		{"t1", "", []chat.Card{done, quest, perm}},
		{"t1", chat.CardOpen, []chat.Card{quest, perm}},
		{"t1", chat.CardCancelled, []chat.Card{done}},
		{"t1", chat.CardResolved, nil},
		{"t2", "", []chat.Card{other}},
	} {
		got := list(tc.thread, tc.state)
		if len(got) == 0 && len(tc.want) == 0 {
			continue
		}
		check(t, fmt.Sprintf("Cards(%s, %q)", tc.thread, tc.state), got, tc.want)
	}

	// Resolving moves the card out of the open list; the same request id on another thread is untouched.
	resolved := perm
	resolved.State, resolved.ResolvedAt = chat.CardResolved, at(40)
	resolved.Resolution = json.RawMessage(`{"request_id":"r-perm","option_id":"a","by":{"channel":"web","chat":"c1"}}`)
	mustCommit(t, s, store.Batch{Cards: []chat.Card{resolved}})
	check(t, "open cards after resolving", list("t1", chat.CardOpen), []chat.Card{quest})
	check(t, "resolved cards", list("t1", chat.CardResolved), []chat.Card{resolved})
	check(t, "the other thread's card", list("t2", ""), []chat.Card{other})
}

func testInputs(t *testing.T, open Opener) {
	s := fresh(t, open)
	ctx := t.Context()
	seedThread(t, s, "t1", 1)
	seedThread(t, s, "t2", 1)

	in := func(id string, thread chat.ThreadID, acceptedMs int) chat.Input {
		return chat.Input{MessageID: id, ThreadID: thread, From: chat.RouteKey{Channel: "web", Chat: "chat-" + id},
			Text: "please do " + id + " ✓\nsecond line", State: chat.DeliveryQueued, AcceptedAt: at(acceptedMs)}
	}
	// Acceptance order is commit order, not the AcceptedAt clock (which can step back).
	a, b, c, d := in("a", "t1", 50), in("b", "t2", 10), in("c", "t1", 30), in("d", "t2", 40)
	mustCommit(t, s, store.Batch{Inputs: []chat.Input{a}})
	mustCommit(t, s, store.Batch{Inputs: []chat.Input{b, c}})
	mustCommit(t, s, store.Batch{Inputs: []chat.Input{d}})

	pending := func() []chat.Input {
		t.Helper()
		p, err := s.PendingInputs(ctx)
		if err != nil {
			t.Fatalf("PendingInputs: %v", err)
		}
		for _, x := range p {
			checkUTC(t, "accepted_at", x.AcceptedAt)
		}
		return p
	}
	check(t, "pending after accepting a, b, c, d", pending(), []chat.Input{a, b, c, d})

	// Delivering is still pending and keeps its place; so does a re-upsert of a queued input.
	a.State = chat.DeliveryDelivering
	mustCommit(t, s, store.Batch{Inputs: []chat.Input{a, b}})
	check(t, "pending after a starts delivering", pending(), []chat.Input{a, b, c, d})

	// Submitted and failed leave the queue; the row stays, with its detail.
	a.State = chat.DeliverySubmitted
	c.State, c.Detail = chat.DeliveryFailed, "the agent exited: claude: exit status 1"
	mustCommit(t, s, store.Batch{Inputs: []chat.Input{c, a}})
	check(t, "pending after a submitted and c failed", pending(), []chat.Input{b, d})
	for _, want := range []chat.Input{a, c} {
		got, err := s.Input(ctx, want.From, want.MessageID)
		if err != nil {
			t.Fatalf("Input(%s): %v", want.MessageID, err)
		}
		check(t, "Input "+want.MessageID, got, want)
	}

	// A new input goes behind the ones already waiting.
	e := in("e", "t1", 1)
	mustCommit(t, s, store.Batch{Inputs: []chat.Input{e}})
	check(t, "pending after accepting e", pending(), []chat.Input{b, d, e})

	// A message id is one route's: another route's "a" is another message, and
	// updating either leaves the other as it was.
	other := in("a", "t2", 60)
	other.From, other.Text = chat.RouteKey{Channel: "irc", Chat: "#agents"}, "another message"
	mustCommit(t, s, store.Batch{Inputs: []chat.Input{other}})
	check(t, "pending after another route's a", pending(), []chat.Input{b, d, e, other})
	for _, want := range []chat.Input{a, other} {
		got, err := s.Input(ctx, want.From, "a")
		if err != nil {
			t.Fatalf("Input(%s, a): %v", want.From, err)
		}
		check(t, "Input a from "+want.From.String(), got, want)
	}
	other.State = chat.DeliveryFailed
	mustCommit(t, s, store.Batch{Inputs: []chat.Input{other}})
	if got, err := s.Input(ctx, a.From, "a"); err != nil || got.State != chat.DeliverySubmitted {
		t.Errorf("Input(%s, a) after the other route's a failed: got %+v, %v; want it still submitted", a.From, got, err)
	}
}

func testRoutes(t *testing.T, open Opener) {
	s := fresh(t, open)
	ctx := t.Context()
	seedThread(t, s, "t1", 1)
	seedThread(t, s, "t2", 1)
	if rs, err := s.Routes(ctx); err != nil || len(rs) != 0 {
		t.Fatalf("Routes on a store without routes: got %d, %v; want none", len(rs), err)
	}

	web := chat.RouteKey{Channel: "web", Chat: "c1"}
	tui := chat.RouteKey{Channel: "tui", Chat: "c1"} // same chat name, other channel: another route
	before := time.Now().Add(-time.Second)
	for _, a := range []struct {
		key    chat.RouteKey
		thread chat.ThreadID
	}{{web, "t1"}, {tui, "t1"}, {web, "t2"}} { // the last one re-attaches web:c1
		if err := s.AttachRoute(ctx, a.key, a.thread); err != nil {
			t.Fatalf("AttachRoute(%s, %s): %v", a.key, a.thread, err)
		}
	}
	for _, want := range []struct {
		key    chat.RouteKey
		thread chat.ThreadID
	}{{web, "t2"}, {tui, "t1"}} {
		got, err := s.Route(ctx, want.key)
		if err != nil {
			t.Fatalf("Route(%s): %v", want.key, err)
		}
		if got.Key != want.key || got.ThreadID != want.thread {
			t.Errorf("Route(%s): got %s → %s, want → %s", want.key, got.Key, got.ThreadID, want.thread)
		}
		if got.UpdatedAt.Before(before) {
			t.Errorf("Route(%s).UpdatedAt: got %v, want the time of the attach (after %v)", want.key, got.UpdatedAt, before)
		}
	}
	rs, err := s.Routes(ctx)
	if err != nil {
		t.Fatalf("Routes: %v", err)
	}
	var got []string
	for _, r := range rs {
		got = append(got, r.Key.String()+"→"+string(r.ThreadID))
	}
	slices.Sort(got)
	if want := []string{"tui:c1→t1", "web:c1→t2"}; !slices.Equal(got, want) {
		t.Errorf("Routes: got %v, want %v", got, want)
	}
}

// A route on another machine's thread is kept like any route (it survives a
// restart), and a route is on one thread only, local or remote.
func testRemoteRoutes(t *testing.T, open Opener) {
	name := dbName(t)
	s := openNamed(t, open, name)
	ctx := t.Context()
	seedThread(t, s, "t1", 1)
	web := chat.RouteKey{Channel: "web", Chat: "c1"}
	tui := chat.RouteKey{Channel: "tui", Chat: "c1"}
	if err := s.AttachRoute(ctx, web, "t1"); err != nil {
		t.Fatal(err)
	}
	for _, a := range []struct {
		key    chat.RouteKey
		thread chat.ThreadID
	}{{web, "x@b"}, {tui, "y@b"}} {
		if err := s.AttachRemoteRoute(ctx, a.key, a.thread); err != nil {
			t.Fatalf("AttachRemoteRoute(%s, %s): %v", a.key, a.thread, err)
		}
	}
	routes := func() []string {
		t.Helper()
		rs, err := s.Routes(ctx)
		if err != nil {
			t.Fatalf("Routes: %v", err)
		}
		var got []string
		for _, r := range rs {
			one, err := s.Route(ctx, r.Key)
			if err != nil || one.ThreadID != r.ThreadID {
				t.Fatalf("Route(%s): %+v %v, Routes says %s", r.Key, one, err, r.ThreadID)
			}
			got = append(got, r.Key.String()+"→"+string(r.ThreadID))
		}
		return got
	}
	if got, want := routes(), []string{"tui:c1→y@b", "web:c1→x@b"}; !slices.Equal(got, want) {
		t.Fatalf("Routes: got %v, want %v", got, want)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openNamed(t, open, name)
	if err := s.AttachRoute(ctx, tui, "t1"); err != nil {
		t.Fatal(err)
	}
	if got, want := routes(), []string{"tui:c1→t1", "web:c1→x@b"}; !slices.Equal(got, want) {
		t.Fatalf("Routes after a reopen and a local attach: got %v, want %v", got, want)
	}
}

// A route's ask for a new thread on another machine survives a restart, a
// second ask replaces the first, and attaching the route to a thread, local
// or remote, drops it.
func testRouteAsks(t *testing.T, open Opener) {
	name := dbName(t)
	s := openNamed(t, open, name)
	ctx := t.Context()
	seedThread(t, s, "t1", 1)
	web := chat.RouteKey{Channel: "web", Chat: "c1"}
	irc := chat.RouteKey{Channel: "irc", Chat: "#dev"}
	tui := chat.RouteKey{Channel: "tui", Chat: "c1"}
	for _, a := range []store.RouteAsk{
		{Key: web, Agent: "claude", Cwd: "/old", Node: "b", AskID: "ask_1"},
		{Key: web, Agent: "claude", Cwd: "/b/work", Node: "b", AskID: "ask_2"},
		{Key: irc, Agent: "gemini", Node: "c", AskID: "ask_3"},
		{Key: tui, Agent: "claude", Node: "b", AskID: "ask_4"},
	} {
		if err := s.SetRouteAsk(ctx, a); err != nil {
			t.Fatalf("SetRouteAsk(%+v): %v", a, err)
		}
	}
	asks := func() []store.RouteAsk {
		t.Helper()
		as, err := s.RouteAsks(ctx)
		if err != nil {
			t.Fatalf("RouteAsks: %v", err)
		}
		return as
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openNamed(t, open, name)
	want := []store.RouteAsk{{Key: irc, Agent: "gemini", Node: "c", AskID: "ask_3"}, {Key: tui, Agent: "claude", Node: "b", AskID: "ask_4"},
		{Key: web, Agent: "claude", Cwd: "/b/work", Node: "b", AskID: "ask_2"}}
	if got := asks(); !slices.Equal(got, want) {
		t.Fatalf("RouteAsks after a reopen: got %+v, want %+v", got, want)
	}
	if err := s.AttachRoute(ctx, web, "t1"); err != nil {
		t.Fatal(err)
	}
	if err := s.AttachRemoteRoute(ctx, irc, "x@c"); err != nil {
		t.Fatal(err)
	}
	if got := asks(); !slices.Equal(got, want[1:2]) {
		t.Fatalf("RouteAsks after attaching web and irc: got %+v, want only tui's", got)
	}
	for range 2 {
		if err := s.DropRouteAsk(ctx, tui); err != nil {
			t.Fatalf("DropRouteAsk: %v", err)
		}
	}
	if got := asks(); len(got) != 0 {
		t.Fatalf("RouteAsks after dropping tui's: %+v", got)
	}
}

// A message for another machine's thread that failed before it got there
// is kept (a restart too), listed with its thread oldest first, found by
// search; the same route's message id failing again replaces it, and a
// retry drops it, from search too.
func testFailedRemotes(t *testing.T, open Opener) {
	name := dbName(t)
	s := openNamed(t, open, name)
	ctx := t.Context()
	web := chat.RouteKey{Channel: "web", Chat: "c1"}
	irc := chat.RouteKey{Channel: "irc", Chat: "#dev"}
	for _, f := range []store.FailedRemote{
		{Thread: "x@b", From: web, MessageID: "m1", Text: "deploy the staging branch", Reason: "machine b did not take it", At: at(1)},
		{Thread: "y@b", From: web, MessageID: "m2", Text: "elsewhere", Reason: "refused", At: at(2)},
		{Thread: "x@b", From: irc, MessageID: "m1", Text: "another chat's m1", Reason: "refused", At: at(3)},
	} {
		if err := s.PutFailedRemote(ctx, f); err != nil {
			t.Fatalf("PutFailedRemote(%+v): %v", f, err)
		}
	}
	list := func(thread chat.ThreadID) []string {
		t.Helper()
		fs, err := s.FailedRemotes(ctx, thread)
		if err != nil {
			t.Fatalf("FailedRemotes(%s): %v", thread, err)
		}
		var out []string
		for _, f := range fs {
			if f.Thread != thread || f.At.IsZero() {
				t.Fatalf("FailedRemotes(%s): %+v", thread, f)
			}
			out = append(out, f.From.String()+"/"+f.MessageID+" "+f.Text+": "+f.Reason)
		}
		return out
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openNamed(t, open, name)
	want := []string{"web:c1/m1 deploy the staging branch: machine b did not take it", "irc:#dev/m1 another chat's m1: refused"}
	if got := list("x@b"); !slices.Equal(got, want) {
		t.Fatalf("FailedRemotes after a reopen: %q, want %q", got, want)
	}
	hits, err := s.Search(ctx, "staging", 10)
	if err != nil || len(hits) != 1 || hits[0].Thread != "x@b" || hits[0].Kind != "user" {
		t.Fatalf("Search for a failed message: %+v %v, want its thread", hits, err)
	}
	if err := s.PutFailedRemote(ctx, store.FailedRemote{Thread: "x@b", From: web, MessageID: "m1", Text: "deploy the staging branch", Reason: "machine b was revoked", At: at(4)}); err != nil {
		t.Fatal(err)
	}
	want = []string{"irc:#dev/m1 another chat's m1: refused", "web:c1/m1 deploy the staging branch: machine b was revoked"}
	if got := list("x@b"); !slices.Equal(got, want) {
		t.Fatalf("FailedRemotes after m1 failed again: %q, want %q", got, want)
	}
	if hits, err := s.Search(ctx, "staging", 10); err != nil || len(hits) != 1 {
		t.Fatalf("Search after m1 failed again: %+v %v, want one hit", hits, err)
	}
	for range 2 {
		if err := s.DropFailedRemote(ctx, web, "m1"); err != nil {
			t.Fatalf("DropFailedRemote: %v", err)
		}
	}
	if got := list("x@b"); !slices.Equal(got, want[:1]) {
		t.Fatalf("FailedRemotes after a retry of web's m1: %q, want %q", got, want[:1])
	}
	if hits, err := s.Search(ctx, "staging", 10); err != nil || len(hits) != 0 {
		t.Fatalf("Search after a retry: %+v %v, want nothing", hits, err)
	}
	// The thread deleted on its machine: its failed messages go with it, and
	// search no longer finds them; another thread's stay.
	for range 2 {
		if err := s.DropFailedRemotes(ctx, "x@b"); err != nil {
			t.Fatalf("DropFailedRemotes: %v", err)
		}
	}
	if got := list("x@b"); len(got) != 0 {
		t.Fatalf("FailedRemotes of a deleted thread: %q, want none", got)
	}
	if hits, err := s.Search(ctx, "another chat", 10); err != nil || len(hits) != 0 {
		t.Fatalf("Search after the thread was deleted: %+v %v, want nothing", hits, err)
	}
	if got := list("y@b"); len(got) != 1 {
		t.Fatalf("FailedRemotes of another thread after a deletion: %q, want its one", got)
	}
}

// A thread made for an ask (another machine's "agent@node") is found by the
// ask's id after a restart; an ask names one thread; a deleted thread's ask
// finds none.
func testThreadAsks(t *testing.T, open Opener) {
	name := dbName(t)
	s := openNamed(t, open, name)
	ctx := t.Context()
	if _, err := s.AskThread(ctx, "ask_1"); !errors.Is(err, chat.ErrNotFound) {
		t.Fatalf("AskThread of an ask never made: %v, want not found", err)
	}
	now := time.Now()
	th := chat.Thread{ID: "t1", Agent: "claude", Cwd: "/w", State: chat.ThreadUnloaded, CreatedAt: now, UpdatedAt: now}
	if err := s.Commit(ctx, store.Batch{Thread: &th, Ask: "ask_1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openNamed(t, open, name)
	if id, err := s.AskThread(ctx, "ask_1"); err != nil || id != "t1" {
		t.Fatalf("AskThread after a reopen: %q %v, want t1", id, err)
	}
	other := th
	other.ID = "t2"
	if err := s.Commit(ctx, store.Batch{Thread: &other, Ask: "ask_1"}); err == nil {
		t.Fatal("a second thread for ask_1 was committed")
	}
	if _, err := s.Thread(ctx, "t2"); !errors.Is(err, chat.ErrNotFound) {
		t.Fatalf("the second thread of ask_1: %v, want none (the commit is all or nothing)", err)
	}
	if err := s.Commit(ctx, store.Batch{Ask: "ask_2"}); !errors.Is(err, chat.ErrBadInput) {
		t.Fatalf("an ask without its thread: %v, want bad input", err)
	}
	if err := s.DeleteThread(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AskThread(ctx, "ask_1"); !errors.Is(err, chat.ErrNotFound) {
		t.Fatalf("AskThread of a deleted thread: %v, want not found", err)
	}
}

func testReopen(t *testing.T, open Opener) {
	name := dbName(t)
	s := openNamed(t, open, name)
	ctx := t.Context()
	th := seedThread(t, s, "t1", 5)
	wantEvents := events("t1", 1, 5)
	card := chat.Card{ThreadID: "t1", RequestID: "r1", Kind: chat.CardQuestion, State: chat.CardOpen,
		Request: json.RawMessage(`{"request_id":"r1"}`), TurnMessageID: "m1", CreatedAt: at(3)}
	in := chat.Input{MessageID: "m1", ThreadID: "t1", From: chat.RouteKey{Channel: "web", Chat: "c1"},
		Text: "hi", State: chat.DeliveryDelivering, AcceptedAt: at(2)}
	mustCommit(t, s, store.Batch{Cards: []chat.Card{card}, Inputs: []chat.Input{in}})
	key := chat.RouteKey{Channel: "web", Chat: "c1"}
	if err := s.AttachRoute(ctx, key, "t1"); err != nil {
		t.Fatalf("AttachRoute: %v", err)
	}
	route, err := s.Route(ctx, key)
	if err != nil {
		t.Fatalf("Route: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: got %v, want nil", err)
	}

	// Three more opens: migrations must be idempotent and nothing may be lost.
	for i := 2; i <= 4; i++ {
		s = openNamed(t, open, name)
		got, err := s.Thread(ctx, "t1")
		if err != nil {
			t.Fatalf("open %d: Thread: %v", i, err)
		}
		check(t, fmt.Sprintf("open %d: thread", i), got, th)
		evs, err := s.Events(ctx, "t1", 0, 0)
		if err != nil {
			t.Fatalf("open %d: Events: %v", i, err)
		}
		check(t, fmt.Sprintf("open %d: events", i), evs, wantEvents)
		cs, err := s.Cards(ctx, "t1", chat.CardOpen)
		if err != nil {
			t.Fatalf("open %d: Cards: %v", i, err)
		}
		check(t, fmt.Sprintf("open %d: open cards", i), cs, []chat.Card{card})
		p, err := s.PendingInputs(ctx)
		if err != nil {
			t.Fatalf("open %d: PendingInputs: %v", i, err)
		}
		check(t, fmt.Sprintf("open %d: pending inputs", i), p, []chat.Input{in})
		r, err := s.Route(ctx, key)
		if err != nil {
			t.Fatalf("open %d: Route: %v", i, err)
		}
		check(t, fmt.Sprintf("open %d: route", i), r, route)

		// The reopened store takes writes and still refuses a used seq.
		next := event("t1", int64(len(wantEvents)+1))
		mustCommit(t, s, store.Batch{Events: []chat.Event{next}})
		wantEvents = append(wantEvents, next)
		if err := s.Commit(ctx, store.Batch{Events: []chat.Event{event("t1", 1)}}); err == nil {
			t.Errorf("open %d: Commit of a used seq: got nil error, want one", i)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("open %d: Close: %v", i, err)
		}
	}
}

// testConcurrentCommits runs one writer per thread, as the lanes do, with readers
// beside them; under -race it also checks the store's own locking.
func testConcurrentCommits(t *testing.T, open Opener) {
	s := fresh(t, open)
	ctx := t.Context()
	const threads, batches, perBatch = 6, 40, 3
	for i := range threads {
		th := thread(fmt.Sprintf("t%d", i), at(0))
		mustCommit(t, s, store.Batch{Thread: &th})
	}

	var wg sync.WaitGroup
	errs := make(chan error, threads*batches+threads)
	stop := make(chan struct{})
	for i := range threads {
		id := chat.ThreadID(fmt.Sprintf("t%d", i))
		wg.Go(func() {
			for b := range batches {
				from := int64(b*perBatch + 1)
				th := thread(string(id), at(b))
				th.LastSeq = from + perBatch - 1
				in := chat.Input{MessageID: fmt.Sprintf("%s-m%d", id, b), ThreadID: id, State: chat.DeliveryQueued, AcceptedAt: at(b)}
				if err := s.Commit(ctx, store.Batch{Thread: &th, Events: events(id, from, from+perBatch-1), Inputs: []chat.Input{in}}); err != nil {
					errs <- fmt.Errorf("thread %s batch %d: %w", id, b, err)
					return
				}
			}
		})
	}
	var readers sync.WaitGroup
	for range 2 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.Threads(ctx); err != nil {
					errs <- fmt.Errorf("listing threads during writes: %w", err)
					return
				}
				evs, err := s.Events(ctx, "t0", 0, 0)
				if err != nil {
					errs <- fmt.Errorf("reading events during writes: %w", err)
					return
				}
				// A reader sees whole batches only.
				if len(evs)%perBatch != 0 {
					errs <- fmt.Errorf("reading events during writes: got %d events, want a multiple of %d", len(evs), perBatch)
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	for i := range threads {
		id := chat.ThreadID(fmt.Sprintf("t%d", i))
		evs, err := s.Events(ctx, id, 0, 0)
		if err != nil {
			t.Fatalf("Events(%s): %v", id, err)
		}
		if g, w := seqs(evs), span(1, batches*perBatch); !slices.Equal(g, w) {
			t.Errorf("Events(%s): got seqs %v, want 1..%d", id, g, batches*perBatch)
		}
		th, err := s.Thread(ctx, id)
		if err != nil {
			t.Fatalf("Thread(%s): %v", id, err)
		}
		if th.LastSeq != batches*perBatch {
			t.Errorf("Thread(%s).LastSeq: got %d, want %d", id, th.LastSeq, batches*perBatch)
		}
	}
	p, err := s.PendingInputs(ctx)
	if err != nil {
		t.Fatalf("PendingInputs: %v", err)
	}
	if len(p) != threads*batches {
		t.Errorf("PendingInputs: got %d, want %d", len(p), threads*batches)
	}
	// Each thread's inputs are in the order its lane committed them.
	last := map[chat.ThreadID]int{}
	for _, in := range p {
		var b int
		fmt.Sscanf(in.MessageID[strings.LastIndex(in.MessageID, "-m")+2:], "%d", &b)
		if prev, ok := last[in.ThreadID]; ok && b != prev+1 {
			t.Errorf("PendingInputs: %s after batch %d of its thread, want batch %d", in.MessageID, prev, prev+1)
		}
		last[in.ThreadID] = b
	}
}

// PruneEvents deletes a prefix of each idle thread's log (the events stamped
// before the cutoff) and nothing of a thread that is working, has a message
// waiting or an open card; last_seq stays, so the log goes on from it.
func testPruneEvents(t *testing.T, open Opener) {
	s := fresh(t, open)
	ctx := t.Context()
	idle := func(id string) chat.Thread {
		th := seedThread(t, s, id, 10)
		th.State, th.TurnMessageID = chat.ThreadIdle, ""
		mustCommit(t, s, store.Batch{Thread: &th})
		return th
	}
	old := idle("old")
	seedThread(t, s, "working", 10) // a turn in flight
	idle("waiting")
	mustCommit(t, s, store.Batch{Inputs: []chat.Input{{MessageID: "w1", ThreadID: "waiting",
		From: chat.RouteKey{Channel: "web", Chat: "c"}, Text: "hi", State: chat.DeliveryQueued, AcceptedAt: at(11)}}})
	idle("carded")
	mustCommit(t, s, store.Batch{Cards: []chat.Card{{ThreadID: "carded", RequestID: "r1", Kind: chat.CardPermission,
		State: chat.CardOpen, Request: json.RawMessage(`{"request_id":"r1"}`), CreatedAt: at(11)}}})

	n, err := s.PruneEvents(ctx, at(6)) // events 1..5 are stamped before it
	if err != nil {
		t.Fatalf("PruneEvents: %v", err)
	}
	check(t, "events pruned", n, int64(5))
	evs, err := s.Events(ctx, "old", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "the idle thread's log after pruning", seqs(evs), span(6, 10))
	evs, err = s.Events(ctx, "old", 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "events after a pruned seq", seqs(evs), span(6, 8))
	for _, id := range []chat.ThreadID{"working", "waiting", "carded"} {
		evs, err := s.Events(ctx, id, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		check(t, "the log of "+string(id), seqs(evs), span(1, 10))
	}
	if n, err := s.PruneEvents(ctx, at(6)); err != nil || n != 0 {
		t.Fatalf("pruning again: got %d, %v; want 0, nil", n, err)
	}

	// Everything pruned: last_seq stays, and the log goes on after it.
	if n, err := s.PruneEvents(ctx, at(1000)); err != nil || n != 5 {
		t.Fatalf("pruning the rest: got %d, %v; want 5, nil", n, err)
	}
	got, err := s.Thread(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	check(t, "last_seq after pruning every event", got.LastSeq, int64(10))
	if tail, err := s.Tail(ctx, "old", 5); err != nil || len(tail) != 0 {
		t.Fatalf("tail of a pruned log: got %v, %v; want none", seqs(tail), err)
	}
	old.LastSeq = 11
	mustCommit(t, s, store.Batch{Thread: &old, Events: events("old", 11, 11)})
	evs, err = s.Events(ctx, "old", 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "the log after a new event", seqs(evs), span(11, 11))
}

// testUsage: a thread's usage events sum to its totals, another thread's do
// not count, and the newest context fill is the thread's.
func testUsage(t *testing.T, open Opener) {
	s := fresh(t, open)
	a, b := thread("a", at(1)), thread("b", at(1))
	var evs []chat.Event
	add := func(th chat.ThreadID, seq int64, u chat.Usage) chat.Event {
		ev, err := chat.NewEvent(th, u, at(int(seq)))
		if err != nil {
			t.Fatal(err)
		}
		ev.Seq = seq
		return ev
	}
	evs = append(evs, add(a.ID, 1, chat.Usage{InputTokens: 10, OutputTokens: 5, CostUSD: 0.1, ContextTokens: 15, ContextWindow: 200000}))
	evs = append(evs, event(a.ID, 2))
	evs = append(evs, add(a.ID, 3, chat.Usage{ContextTokens: 40, ContextWindow: 200000}))
	evs = append(evs, add(a.ID, 4, chat.Usage{InputTokens: 20, OutputTokens: 7, CostUSD: 0.2}))
	a.LastSeq = 4
	mustCommit(t, s, store.Batch{Thread: &a, Events: evs})
	b.LastSeq = 1
	mustCommit(t, s, store.Batch{Thread: &b, Events: []chat.Event{add(b.ID, 1, chat.Usage{InputTokens: 99, CostUSD: 9})}})
	got, err := s.Usage(t.Context(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "usage of a", got, chat.UsageTotals{Turns: 2, InputTokens: 30, OutputTokens: 12, CostUSD: 0.3, ContextTokens: 40, ContextWindow: 200000})
	if got, err := s.Usage(t.Context(), "none"); err != nil || got != (chat.UsageTotals{}) {
		t.Errorf("usage of no thread: %+v, %v; want zero", got, err)
	}
}
