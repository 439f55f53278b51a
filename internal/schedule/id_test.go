package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/parleyhq/parley/internal/chat"
)

// The same add sent twice (its first answer lost) is one schedule: the
// second answers the first's, says it existed, and it runs once per due
// time. After a restart of the machine that keeps it (its SQLite opened
// again), the same add still finds it. The same id with another text is
// refused, and the kept schedule is unchanged.
func TestTheSameAddSentAgainIsOneSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		g := newRig(t, dir)
		start := time.Now()
		sp := Spec{ID: "sch_retry-1", Agent: "echo", Cwd: dir, Every: "1h", Name: "tests", Text: "run the tests"}
		first, existed, err := g.run.add(context.Background(), sp)
		if err != nil || existed || first.ID != sp.ID {
			t.Fatalf("first add: %+v existed=%v %v, want schedule %s made", first, existed, err, sp.ID)
		}
		again, existed, err := g.run.add(context.Background(), sp)
		if all, _ := g.run.List(context.Background()); len(all) != 1 {
			t.Fatalf("%d schedules after the same add twice, want 1: %+v", len(all), all)
		}
		if err != nil || !existed || again.ID != first.ID || !again.Created.Equal(first.Created) {
			t.Fatalf("the same add again: %+v existed=%v %v, want the first's schedule", again, existed, err)
		}
		sleepUntil(start.Add(2*time.Hour + time.Minute))
		if runs := g.runsOf(sp.ID); len(runs) != 2 {
			t.Fatalf("%d runs in 2h of every 1h, want 2 (one per due time): %+v", len(runs), runs)
		}

		// parley restarts: the add sent again finds the kept schedule.
		g.close()
		g = newRig(t, dir)
		defer g.close()
		again, existed, err = g.run.add(context.Background(), sp)
		if err != nil || !existed || again.ID != sp.ID || again.LastRun == nil {
			t.Fatalf("the same add after a restart: %+v existed=%v %v, want the kept schedule with its runs", again, existed, err)
		}
		other := sp
		other.Text = "deploy"
		if _, err := g.run.Add(context.Background(), other); !errors.Is(err, ErrIDTaken) || !strings.Contains(err.Error(), "choose a new id") {
			t.Fatalf("the same id, another text: %v, want ErrIDTaken", err)
		}
		all, _ := g.run.List(context.Background())
		if len(all) != 1 || all[0].Text != "run the tests" {
			t.Fatalf("after the refused add: %+v, want the one schedule unchanged", all)
		}
		sleepUntil(start.Add(3*time.Hour + time.Minute))
		if runs := g.runsOf(sp.ID); len(runs) != 3 {
			t.Fatalf("%d runs in 3h, want 3", len(runs))
		}
	})
}

// An id must be letters, digits, "_" and "-", at most MaxID bytes: anything
// else is refused saying so, and nothing is kept.
func TestABadIDIsRefused(t *testing.T) {
	bubble(t, func(t *testing.T, g *rig) {
		for _, id := range []string{"a@b", "has space", "a/b", "../x", "é", "x\n", strings.Repeat("x", MaxID+1)} {
			_, err := g.run.Add(context.Background(), Spec{ID: id, Agent: "echo", Cwd: g.dir, Every: "1h", Text: "x"})
			if !errors.Is(err, chat.ErrBadInput) || !strings.Contains(err.Error(), "id") {
				t.Errorf("id %q: %v, want bad input about the id", id, err)
			}
		}
		if all, _ := g.run.List(context.Background()); len(all) != 0 {
			t.Errorf("refused adds were kept: %+v", all)
		}
		if _, err := g.run.Add(context.Background(), Spec{ID: strings.Repeat("x", MaxID), Agent: "echo", Cwd: g.dir, Every: "1h", Text: "x"}); err != nil {
			t.Errorf("an id of %d bytes: %v", MaxID, err)
		}
	})
}

// Over POST /api/schedules: the same add twice answers 200 both times with
// one schedule, the second saying it existed; the id with another spec is
// a 409 id_taken; a bad id a 400.
func TestTheAPIAnswersTheSameAddOnce(t *testing.T) {
	bubble(t, func(t *testing.T, g *rig) {
		mux := http.NewServeMux()
		g.run.Handle(func(p string, h http.Handler) { mux.Handle(p, h) })
		post := func(body map[string]any) (int, map[string]any) {
			b, _ := json.Marshal(body)
			w := httptest.NewRecorder()
			mux.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/api/schedules", strings.NewReader(string(b))))
			var out map[string]any
			if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
				t.Fatalf("answer %d %q: %v", w.Code, w.Body, err)
			}
			return w.Code, out
		}
		add := map[string]any{"id": "sch_web1", "agent": "echo", "cwd": g.dir, "every": "2h", "text": "look"}
		st, first := post(add)
		if st != 200 || first["existed"] != nil {
			t.Fatalf("first add: %d %v", st, first)
		}
		st, again := post(add)
		if st != 200 || again["existed"] != true || again["schedule"].(map[string]any)["id"] != "sch_web1" {
			t.Fatalf("the same add again: %d %v, want 200 with the schedule, existed", st, again)
		}
		add["every"] = "3h"
		if st, out := post(add); st != http.StatusConflict || out["error"].(map[string]any)["code"] != CodeIDTaken {
			t.Fatalf("the id with another timing: %d %v, want 409 %s", st, out, CodeIDTaken)
		}
		add["id"] = "sch@hub"
		if st, out := post(add); st != http.StatusBadRequest || !strings.Contains(out["error"].(map[string]any)["message"].(string), "id") {
			t.Fatalf("a bad id: %d %v, want 400 about the id", st, out)
		}
		if all, _ := g.run.List(context.Background()); len(all) != 1 || all[0].Expr != "2h" {
			t.Fatalf("kept: %+v, want the first add's one schedule", all)
		}
	})
}
