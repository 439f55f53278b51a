package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/fanout"
	"github.com/parleyhq/parley/internal/router"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/sqlite"
	"github.com/parleyhq/parley/internal/testkit/scripted"
)

// rig is a real router over SQLite and the scripted agent, and a Runner over
// the same store, in a synctest bubble: its clock is the bubble's fake one,
// so a day passes in a moment and synctest.Wait says when all has settled.
type rig struct {
	t   *testing.T
	dir string
	st  *sqlite.Store
	rt  *router.Router
	run *Runner
}

func newRig(t *testing.T, dir string) *rig {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "parley.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	rt := router.New(st, fanout.New(nil), router.Options{
		Agents:       []config.Agent{{ID: "echo", Transport: "scripted", Command: "scripted", Roots: []string{dir}}},
		DefaultAgent: "echo",
		Drivers:      map[string]driver.Driver{"scripted": &scripted.Driver{}},
		MaxSessions:  200, ThreadsPerMinute: 10000, QueueDepth: 64,
	})
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	g := &rig{t: t, dir: dir, st: st, rt: rt}
	g.start(st)
	return g
}

// start starts a Runner over s (the store, or a wrapper of it).
func (g *rig) start(s Store) {
	g.t.Helper()
	run, err := Start(context.Background(), Options{Store: s, Send: g.rt})
	if err != nil {
		g.t.Fatal(err)
	}
	g.run = run
}

func (g *rig) close() {
	if g.run != nil {
		g.run.Close()
	}
	g.rt.Close(context.Background())
	g.st.Close()
}

func (g *rig) add(sp Spec) Schedule {
	g.t.Helper()
	if sp.Agent == "" {
		sp.Agent, sp.Cwd = "echo", g.dir
	}
	if sp.Text == "" {
		sp.Text = "report"
	}
	s, err := g.run.Add(context.Background(), sp)
	if err != nil {
		g.t.Fatal(err)
	}
	return s
}

func (g *rig) get(id string) Schedule {
	g.t.Helper()
	all, err := g.run.List(context.Background())
	if err != nil {
		g.t.Fatal(err)
	}
	for _, s := range all {
		if s.ID == id {
			return s
		}
	}
	g.t.Fatalf("schedule %s is not listed", id)
	return Schedule{}
}

// run is one message a schedule sent, as the router stored it.
type run struct {
	thread chat.ThreadID
	msg    chat.UserMessage
	ts     time.Time
}

// runs reads every user_message of every thread the router keeps: what the
// agents were sent, whatever the runner believes it did.
func (g *rig) runs() []run {
	g.t.Helper()
	ctx := context.Background()
	ths, err := g.st.Threads(ctx)
	if err != nil {
		g.t.Fatal(err)
	}
	var out []run
	for _, th := range ths {
		evs, err := g.st.Events(ctx, th.ID, 0, 1<<20)
		if err != nil {
			g.t.Fatal(err)
		}
		for _, ev := range evs {
			if ev.Type != chat.TypeUserMessage {
				continue
			}
			var m chat.UserMessage
			if err := json.Unmarshal(ev.Payload, &m); err != nil {
				g.t.Fatal(err)
			}
			out = append(out, run{thread: th.ID, msg: m, ts: ev.TS})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].msg.MessageID < out[j].msg.MessageID })
	return out
}

// runsOf is runs of one schedule, by message id.
func (g *rig) runsOf(id string) []run {
	var out []run
	for _, r := range g.runs() {
		if r.msg.Origin != nil && r.msg.Origin.ID == id {
			out = append(out, r)
		}
	}
	return out
}

func bubble(t *testing.T, f func(t *testing.T, g *rig)) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, "")
		defer g.close()
		f(t, g)
	})
}

// sleepUntil waits in fake time until at, and for everything to settle.
func sleepUntil(at time.Time) {
	time.Sleep(time.Until(at))
	synctest.Wait()
}

func TestCronRunsInItsTimeZone(t *testing.T) {
	bubble(t, func(t *testing.T, g *rig) {
		ny, err := time.LoadLocation("America/New_York")
		if err != nil {
			t.Skip("no tz database:", err)
		}
		// The bubble starts on Saturday 2000-01-01 00:00 UTC: the first weekday
		// 09:00 in New York is Monday's, 14:00 UTC.
		s := g.add(Spec{Cron: "0 9 * * 1-5", TZ: "America/New_York", Name: "standup"})
		want := time.Date(2000, 1, 3, 9, 0, 0, 0, ny)
		if s.NextRun == nil || !s.NextRun.Equal(want) {
			t.Fatalf("next run %v, want %v", s.NextRun, want)
		}
		sleepUntil(want.Add(-time.Second))
		if n := len(g.runsOf(s.ID)); n != 0 {
			t.Fatalf("%d runs before 09:00 in New York", n)
		}
		sleepUntil(want.Add(time.Second))
		runs := g.runsOf(s.ID)
		if len(runs) != 1 {
			t.Fatalf("%d runs at 09:00 in New York, want 1", len(runs))
		}
		o := runs[0].msg.Origin
		if *o != (chat.Origin{Kind: chat.OriginSchedule, ID: s.ID, Name: "standup"}) || runs[0].msg.Text != "report" {
			t.Errorf("run: %+v origin %+v", runs[0].msg, o)
		}
		got := g.get(s.ID)
		if got.LastRun == nil || !got.LastRun.Equal(want) || got.LastThread != runs[0].thread {
			t.Errorf("listed last run %v in %s, want %v in %s", got.LastRun, got.LastThread, want, runs[0].thread)
		}
		if next := want.AddDate(0, 0, 1); got.NextRun == nil || !got.NextRun.Equal(next) {
			t.Errorf("next run %v, want Tuesday's %v", got.NextRun, next)
		}
	})
}

func TestEveryRunsIntoItsOwnThread(t *testing.T) {
	bubble(t, func(t *testing.T, g *rig) {
		start := time.Now()
		s := g.add(Spec{Every: "90m"})
		sleepUntil(start.Add(4*time.Hour + 31*time.Minute))
		runs := g.runsOf(s.ID)
		if len(runs) != 3 {
			t.Fatalf("%d runs in 4h31m of every 90m, want 3", len(runs))
		}
		for i, r := range runs {
			due := start.Add(time.Duration(i+1) * 90 * time.Minute)
			if r.msg.MessageID != runID(s.ID, due) || !r.ts.Equal(due) {
				t.Errorf("run %d: %s at %v, want %s at %v", i, r.msg.MessageID, r.ts, runID(s.ID, due), due)
			}
			if r.thread != runs[0].thread {
				t.Errorf("run %d went to %s, not the schedule's own thread %s", i, r.thread, runs[0].thread)
			}
		}
	})
}

func TestNewEachAndNamedThread(t *testing.T) {
	bubble(t, func(t *testing.T, g *rig) {
		start := time.Now()
		fresh := g.add(Spec{Every: "1h", NewEach: true})
		sleepUntil(start.Add(2*time.Hour + time.Minute))
		runs := g.runsOf(fresh.ID)
		if len(runs) != 2 || runs[0].thread == runs[1].thread {
			t.Fatalf("--new: %d runs, want 2 in two threads: %+v", len(runs), runs)
		}
		named := g.add(Spec{Every: "1h", Thread: runs[0].thread})
		sleepUntil(time.Now().Add(time.Hour + time.Minute))
		got := g.runsOf(named.ID)
		if len(got) != 1 || got[0].thread != runs[0].thread {
			t.Fatalf("--thread: %+v, want one run in %s", got, runs[0].thread)
		}
	})
}

func TestAtRunsOnce(t *testing.T) {
	bubble(t, func(t *testing.T, g *rig) {
		at := time.Now().Add(10 * time.Minute).UTC()
		s := g.add(Spec{At: at.Format(time.RFC3339)})
		sleepUntil(at.Add(48 * time.Hour))
		if runs := g.runsOf(s.ID); len(runs) != 1 || !runs[0].ts.Equal(at) {
			t.Fatalf("--at: %+v, want one run at %v", runs, at)
		}
		if got := g.get(s.ID); got.NextRun != nil {
			t.Errorf("an --at that ran still has a next run: %v", got.NextRun)
		}
		if _, err := g.run.Add(context.Background(), Spec{Agent: "echo", Cwd: g.dir, Text: "x",
			At: time.Now().Add(-time.Minute).Format(time.RFC3339)}); !errors.Is(err, chat.ErrBadInput) {
			t.Errorf("an --at in the past: %v, want bad input", err)
		}
	})
}

// Parley is down for five hours across five hourly runs: run-once runs
// once at the restart, skip runs none and goes on at the next hour.
func TestMissedRunOnceOrSkip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, "")
		defer func() { g.close() }()
		start := time.Now()
		once := g.add(Spec{Every: "1h", Missed: MissedRunOnce})
		skip := g.add(Spec{Every: "1h", Missed: MissedSkip})
		sleepUntil(start.Add(time.Hour + time.Minute))
		g.run.Close()
		g.run = nil
		sleepUntil(start.Add(6*time.Hour + 30*time.Minute)) // down: 2h … 6h missed
		g.start(g.st)
		synctest.Wait()
		back := time.Now()
		onceRuns, skipRuns := g.runsOf(once.ID), g.runsOf(skip.ID)
		if len(onceRuns) != 2 || onceRuns[1].msg.MessageID != runID(once.ID, start.Add(6*time.Hour)) || !onceRuns[1].ts.Equal(back) {
			t.Fatalf("run-once: %+v, want the first run and one at the restart for the 6h run", onceRuns)
		}
		if len(skipRuns) != 1 {
			t.Fatalf("skip: %d runs, want only the first", len(skipRuns))
		}
		if next := g.get(skip.ID).NextRun; next == nil || !next.Equal(start.Add(7*time.Hour)) {
			t.Errorf("skip: next run %v, want %v", next, start.Add(7*time.Hour))
		}
		sleepUntil(start.Add(7*time.Hour + time.Minute))
		if n, m := len(g.runsOf(once.ID)), len(g.runsOf(skip.ID)); n != 3 || m != 2 {
			t.Errorf("after 7h: %d and %d runs, want 3 and 2", n, m)
		}
	})
}

func TestPauseAndResume(t *testing.T) {
	bubble(t, func(t *testing.T, g *rig) {
		start := time.Now()
		s := g.add(Spec{Every: "1h"})
		ctx := context.Background()
		p, err := g.run.SetPaused(ctx, s.ID, true)
		if err != nil || !p.Paused || p.NextRun != nil {
			t.Fatalf("pause: %+v %v", p, err)
		}
		sleepUntil(start.Add(3*time.Hour + 30*time.Minute))
		if n := len(g.runsOf(s.ID)); n != 0 {
			t.Fatalf("%d runs while paused", n)
		}
		r, err := g.run.SetPaused(ctx, s.ID, false)
		if err != nil || r.NextRun == nil || !r.NextRun.Equal(start.Add(4*time.Hour)) {
			t.Fatalf("resume: %+v %v; want the next run at 4h, none for what came due while paused", r, err)
		}
		synctest.Wait()
		if n := len(g.runsOf(s.ID)); n != 0 {
			t.Fatalf("resuming ran %d missed runs", n)
		}
		sleepUntil(start.Add(4*time.Hour + time.Minute))
		if n := len(g.runsOf(s.ID)); n != 1 {
			t.Fatalf("%d runs after resuming, want 1", n)
		}
		if err := g.run.Remove(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
		sleepUntil(start.Add(8 * time.Hour))
		if n := len(g.runsOf(s.ID)); n != 1 {
			t.Fatalf("%d runs after rm, want still 1", n)
		}
		if _, err := g.run.SetPaused(ctx, s.ID, true); !errors.Is(err, chat.ErrNotFound) {
			t.Errorf("pause a removed schedule: %v, want not found", err)
		}
	})
}

// forgetful is a store that loses the runner's records of runs, as a kill
// -9 right after the router took a run and before its row was written.
type forgetful struct {
	Store
	mu   sync.Mutex
	lost int
}

func (f *forgetful) PutSchedule(ctx context.Context, s store.Schedule) error {
	if !s.LastRun.IsZero() {
		f.mu.Lock()
		f.lost++
		f.mu.Unlock()
		return errors.New("killed")
	}
	return f.Store.PutSchedule(ctx, s)
}

// A run the router took whose record was lost runs again at the restart
// with the same message id: the agent gets it once.
func TestRunRecordLostRunsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, "")
		defer func() { g.close() }()
		g.run.Close()
		f := &forgetful{Store: g.st}
		g.start(f)
		start := time.Now()
		s := g.add(Spec{Every: "1h"})
		sleepUntil(start.Add(time.Hour + time.Second))
		g.run.Close()
		if f.lost != 1 {
			t.Fatalf("%d records lost, want 1", f.lost)
		}
		g.start(g.st) // the restart: the row still says the 1h run is due
		synctest.Wait()
		runs := g.runsOf(s.ID)
		if len(runs) != 1 {
			t.Fatalf("%d runs of one due time, want 1: %+v", len(runs), runs)
		}
		got := g.get(s.ID)
		if got.LastRun == nil || !got.LastRun.Equal(start.Add(time.Hour)) || got.LastThread != runs[0].thread {
			t.Errorf("after the restart: %+v, want the 1h run recorded", got)
		}
	})
}

func TestAddRefusesBadInput(t *testing.T) {
	bubble(t, func(t *testing.T, g *rig) {
		for _, c := range []struct {
			sp   Spec
			want string
		}{
			{Spec{Every: "30s"}, "at least 1m0s"},
			{Spec{Every: "soon"}, "not a duration"},
			{Spec{Cron: "61 * * * *"}, "cron"},
			{Spec{Cron: "TZ=UTC 0 9 * * *"}, "--tz"},
			{Spec{Cron: "0 9 * * *", Every: "1h"}, "exactly one"},
			{Spec{}, "exactly one"},
			{Spec{At: "tomorrow"}, "RFC 3339"},
			{Spec{Every: "1h", TZ: "Mars/Olympus"}, "unknown time zone"},
			{Spec{Every: "1h", Missed: "sometimes"}, "run-once or skip"},
			{Spec{Every: "1h", Thread: "t1", NewEach: true}, "choose one"},
			{Spec{Every: "1h", Text: strings.Repeat("x", MaxText+1)}, "at most"},
			{Spec{Every: "1h", Text: "  "}, "empty"},
		} {
			sp := c.sp
			sp.Agent, sp.Cwd = "echo", g.dir
			if sp.Text == "" {
				sp.Text = "x"
			}
			_, err := g.run.Add(context.Background(), sp)
			if !errors.Is(err, chat.ErrBadInput) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%+v: %v, want bad input saying %q", c.sp, err, c.want)
			}
		}
		if all, _ := g.run.List(context.Background()); len(all) != 0 {
			t.Errorf("refused schedules were kept: %+v", all)
		}
	})
}

// recorder is the router's send path as far as a schedule sees it: it
// takes a message id once per route (a repeat is chat.ErrDuplicate) and
// counts every send, so a run sent twice shows even though it is refused.
type recorder struct {
	mu    sync.Mutex
	sends map[chat.RouteKey]map[string]int
}

func (r *recorder) Send(_ context.Context, req router.SendRequest) (chat.Delivery, chat.ThreadID, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sends[req.From] == nil {
		r.sends[req.From] = map[string]int{}
	}
	r.sends[req.From][req.Message.MessageID]++
	if r.sends[req.From][req.Message.MessageID] > 1 {
		return chat.Delivery{}, "t1", chat.ErrDuplicate
	}
	return chat.Delivery{State: chat.DeliveryQueued}, "t1", nil
}

// A simulated day of 100 schedules of every kind: every due time runs once,
// none is missed, none doubled. The runner over real SQLite; the router's
// own part (a message id taken once) is TestRunRecordLostRunsOnce's.
func TestSoakDayOfHundredSchedules(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		st, err := sqlite.Open(context.Background(), filepath.Join(dir, "parley.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		rec := &recorder{sends: map[chat.RouteKey]map[string]int{}}
		run, err := Start(context.Background(), Options{Store: st, Send: rec})
		if err != nil {
			t.Fatal(err)
		}
		defer run.Close()
		start := time.Now()
		end := start.Add(24 * time.Hour)
		want := map[string]map[string]bool{} // schedule → its runs' message ids
		crons := []string{"*/7 * * * *", "0 * * * *", "30 9 * * *", "15 */2 * * *", "0 9 * * 1-5", "@daily", "5,35 * * * *"}
		zones := []string{"UTC", "America/New_York", "Asia/Kolkata", "Europe/Paris"}
		for i := range 100 {
			sp := Spec{Agent: "echo", Cwd: dir, Text: fmt.Sprint("job ", i), NewEach: i%5 == 0}
			switch i % 3 {
			case 0:
				sp.Cron, sp.TZ = crons[i%len(crons)], zones[i%len(zones)]
			case 1:
				sp.Every = (time.Duration(10+i) * time.Minute).String()
			default:
				sp.At = start.Add(time.Duration(i) * 13 * time.Minute).UTC().Format(time.RFC3339)
			}
			s, err := run.Add(context.Background(), sp)
			if err != nil {
				t.Fatal(err)
			}
			tm, err := parseTiming(s.Kind, s.Expr, s.TZ, start)
			if err != nil {
				t.Fatal(err)
			}
			want[s.ID] = map[string]bool{}
			for due := tm.next(start); !due.IsZero() && due.Before(end); due = tm.next(due) {
				want[s.ID][runID(s.ID, due)] = true
			}
		}
		sleepUntil(end.Add(-time.Second))
		rec.mu.Lock()
		defer rec.mu.Unlock()
		missed, doubled, expected, total := 0, 0, 0, 0
		for id, runs := range want {
			expected += len(runs)
			for mid := range runs {
				switch rec.sends[Route(id)][mid] {
				case 0:
					missed++
				case 1:
				default:
					doubled++
				}
			}
			total += len(rec.sends[Route(id)])
		}
		if missed != 0 || doubled != 0 || total != expected {
			t.Fatalf("a day of 100 schedules: %d runs of %d due, %d missed, %d doubled", total, expected, missed, doubled)
		}
		t.Logf("a day of 100 schedules: %d runs, 0 missed, 0 doubled", total)
	})
}
