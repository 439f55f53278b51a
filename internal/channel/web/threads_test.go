package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/sqlite"
)

// The thread list says, for every thread, which card it waits on: the newest
// open one, with its kind and a one-line title; answered cards do not count.
func TestThreadListReportsOpenCards(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "parley.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	now := time.Now()
	thread := func(id string) *chat.Thread {
		return &chat.Thread{ID: chat.ThreadID(id), Agent: "claude", Cwd: "/w", State: chat.ThreadWorking, CreatedAt: now, UpdatedAt: now}
	}
	req := func(p any) json.RawMessage {
		b, _ := json.Marshal(p)
		return b
	}
	card := func(th, id, kind, state string, p any, at time.Time) chat.Card {
		return chat.Card{ThreadID: chat.ThreadID(th), RequestID: id, Kind: kind, State: state, Request: req(p), CreatedAt: at}
	}
	perm := chat.PermissionRequest{RequestID: "p1", Tool: chat.PermissionTool{Name: "Bash", Title: "touch made-by-bash"}}
	q := map[string]any{"request_id": "q2", "questions": []map[string]string{{"question": "Which color?"}}}
	for _, b := range []store.Batch{
		{Thread: thread("t_perm"), Cards: []chat.Card{card("t_perm", "p1", chat.CardPermission, chat.CardOpen, perm, now)}},
		{Thread: thread("t_question"), Cards: []chat.Card{
			card("t_question", "q1", chat.CardQuestion, chat.CardResolved, q, now),
			card("t_question", "q2", chat.CardQuestion, chat.CardOpen, q, now.Add(time.Second)),
		}},
		{Thread: thread("t_answered"), Cards: []chat.Card{card("t_answered", "p9", chat.CardPermission, chat.CardResolved, perm, now)}},
		{Thread: thread("t_plain")},
	} {
		if err := st.Commit(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(New(nil, st, nil, Options{Token: testToken}))
	t.Cleanup(srv.Close)
	r, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/threads", nil)
	r.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		Threads []struct {
			ID      string `json:"id"`
			Agent   string `json:"agent"`
			Waiting string `json:"waiting"`
			Card    *struct {
				RequestID string `json:"request_id"`
				Kind      string `json:"kind"`
				Title     string `json:"title"`
			} `json:"card"`
		} `json:"threads"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	type want struct{ waiting, request, title string }
	wants := map[string]want{
		"t_perm":     {"permission", "p1", "touch made-by-bash"},
		"t_question": {"question", "q2", "Which color?"},
		"t_answered": {},
		"t_plain":    {},
	}
	if len(v.Threads) != len(wants) {
		t.Fatalf("got %d threads, want %d", len(v.Threads), len(wants))
	}
	for _, th := range v.Threads {
		w, ok := wants[th.ID]
		if !ok || th.Agent != "claude" {
			t.Errorf("got thread %s of agent %q, want one of the stored threads with its fields", th.ID, th.Agent)
			continue
		}
		var got want
		if th.Card != nil {
			got = want{th.Waiting, th.Card.RequestID, th.Card.Title}
			if th.Card.Kind != th.Waiting {
				t.Errorf("%s: card kind %q, waiting %q, want the same", th.ID, th.Card.Kind, th.Waiting)
			}
		} else {
			got.waiting = th.Waiting
		}
		if got != w {
			t.Errorf("%s: got %+v, want %+v", th.ID, got, w)
		}
	}
}
