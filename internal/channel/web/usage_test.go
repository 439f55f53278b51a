package web

import (
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

func getJSON(t *testing.T, srv *httptest.Server, path string, out any) int {
	t.Helper()
	r, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	r.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("GET %s: Content-Type %q, want JSON", path, ct)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode
}

// The Usage view's numbers: every turn the agents reported, a stopped one
// too, summed per day (in the asker's time zone), per agent, per machine and
// per thread; a turn older than the window is left out.
func TestUsageSumsEveryTurnPerDayAgentMachineAndThread(t *testing.T) {
	ctx := t.Context()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "parley.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	utc := time.UTC
	now := time.Now().In(utc)
	today := time.Date(now.Year(), now.Month(), now.Day(), 12, 0, 0, 0, utc)
	yesterday := today.AddDate(0, 0, -1)
	long := today.AddDate(0, 0, -40)
	add := func(id, agent, title string, evs ...chat.Event) {
		th := chat.Thread{ID: chat.ThreadID(id), Agent: agent, Cwd: "/w", Title: title, State: chat.ThreadIdle, CreatedAt: long, UpdatedAt: today, LastSeq: int64(len(evs))}
		for i := range evs {
			evs[i].Thread, evs[i].Seq = th.ID, int64(i+1)
		}
		if err := st.Commit(ctx, store.Batch{Thread: &th, Events: evs}); err != nil {
			t.Fatal(err)
		}
	}
	ev := func(p chat.Payload, at time.Time) chat.Event {
		e, err := chat.NewEvent("", p, at)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	add("t_a", "claude", "Heron survey",
		ev(chat.Usage{InputTokens: 100, OutputTokens: 10, CostUSD: 0.5}, yesterday),
		ev(chat.PromptDone{StopReason: chat.StopEndTurn}, yesterday),
		// A turn the person stopped: its cost counts all the same.
		ev(chat.Usage{InputTokens: 50, OutputTokens: 5, CostUSD: 0.25}, today),
		ev(chat.PromptDone{StopReason: chat.StopCancelled}, today),
		// A context-only report is no turn.
		ev(chat.Usage{ContextTokens: 900, ContextWindow: 200000}, today))
	add("t_b", "gemini", "Kingfisher notes",
		ev(chat.Usage{InputTokens: 7, OutputTokens: 3, CostUSD: 0.01}, long), // outside 30 days
		ev(chat.Usage{InputTokens: 20, OutputTokens: 2}, today))

	srv := httptest.NewServer(New(nil, st, nil, Options{Token: testToken}))
	t.Cleanup(srv.Close)
	type sum struct {
		Key          string  `json:"key"`
		Title        string  `json:"title"`
		Turns        int64   `json:"turns"`
		InputTokens  int64   `json:"input_tokens"`
		OutputTokens int64   `json:"output_tokens"`
		CostUSD      float64 `json:"cost_usd"`
	}
	var u struct {
		Total     sum   `json:"total"`
		ByDay     []sum `json:"by_day"`
		ByAgent   []sum `json:"by_agent"`
		ByMachine []sum `json:"by_machine"`
		ByThread  []sum `json:"by_thread"`
	}
	if code := getJSON(t, srv, "/api/usage?tz=UTC", &u); code != http.StatusOK {
		t.Fatalf("GET /api/usage: %d", code)
	}
	if want := (sum{Turns: 3, InputTokens: 170, OutputTokens: 17, CostUSD: 0.75}); u.Total != want {
		t.Errorf("total %+v, want %+v", u.Total, want)
	}
	wantDays := []sum{
		{Key: today.Format(time.DateOnly), Turns: 2, InputTokens: 70, OutputTokens: 7, CostUSD: 0.25},
		{Key: yesterday.Format(time.DateOnly), Turns: 1, InputTokens: 100, OutputTokens: 10, CostUSD: 0.5},
	}
	if len(u.ByDay) != 2 || u.ByDay[0] != wantDays[0] || u.ByDay[1] != wantDays[1] {
		t.Errorf("by day %+v, want %+v", u.ByDay, wantDays)
	}
	if len(u.ByAgent) != 2 || u.ByAgent[0].Key != "claude" || u.ByAgent[0].Turns != 2 || u.ByAgent[1].Key != "gemini" || u.ByAgent[1].InputTokens != 20 {
		t.Errorf("by agent %+v, want claude's 2 turns, then gemini's 20 tokens in", u.ByAgent)
	}
	if len(u.ByMachine) != 1 || u.ByMachine[0].Key != "" || u.ByMachine[0].Turns != 3 {
		t.Errorf("by machine %+v, want this one's 3 turns", u.ByMachine)
	}
	if len(u.ByThread) != 2 || u.ByThread[0].Key != "t_a" || u.ByThread[0].Title != "Heron survey" || u.ByThread[0].CostUSD != 0.75 {
		t.Errorf("by thread %+v, want t_a (Heron survey, $0.75) first", u.ByThread)
	}
	// All kept: the old turn counts too.
	if getJSON(t, srv, "/api/usage?days=0", &u); u.Total.Turns != 4 || u.Total.CostUSD != 0.76 {
		t.Errorf("days=0 total %+v, want 4 turns and $0.76", u.Total)
	}
	var e struct {
		Error struct{ Message string } `json:"error"`
	}
	if code := getJSON(t, srv, "/api/usage?tz=Mars/Olympus", &e); code != http.StatusBadRequest || e.Error.Message == "" {
		t.Errorf("an unknown time zone: %d %+v, want 400 saying why", code, e)
	}
}

// A path under /api/ that names nothing answers 404 with the JSON error
// shape, not the dashboard's page, so a script sees its mistake; without the
// token it is still refused first.
func TestUnknownAPIPathIsA404(t *testing.T) {
	srv := httptest.NewServer(New(nil, nil, nil, Options{Token: testToken}))
	t.Cleanup(srv.Close)
	for _, path := range []string{"/api/nosuch", "/api/threads/t_x/nosuch", "/api/"} {
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if code := getJSON(t, srv, path, &e); code != http.StatusNotFound || e.Error.Code != chat.CodeNotFound || e.Error.Message != "no such API: GET "+path {
			t.Errorf("GET %s: %d %+v, want 404 not_found naming it", path, code, e)
		}
	}
	resp, err := http.Get(srv.URL + "/api/nosuch")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /api/nosuch without the token: %d, want 401", resp.StatusCode)
	}
}
