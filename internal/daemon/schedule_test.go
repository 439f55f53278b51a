package daemon_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/schedule"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

// api is the child daemon's REST API with its token.
func (c *child) api() client.API { return client.API{Server: c.url, Token: c.token} }

// addSchedule adds a schedule over the API; a refusal fails the test.
func addSchedule(t *testing.T, api client.API, sp schedule.Spec) schedule.Schedule {
	t.Helper()
	var out struct {
		Schedule schedule.Schedule `json:"schedule"`
	}
	if err := api.Call(context.Background(), http.MethodPost, "/api/schedules", sp, &out); err != nil {
		t.Fatal(err)
	}
	return out.Schedule
}

// ranSchedule waits until the schedule's last run is recorded: the runner
// has it, or the restart's runner found the router had it.
func ranSchedule(t *testing.T, api client.API, id string, within time.Duration) schedule.Schedule {
	t.Helper()
	var got schedule.Schedule
	var all []schedule.Schedule
	testkit.Eventually(t, within, func() bool {
		var out struct {
			Schedules []schedule.Schedule `json:"schedules"`
		}
		_ = api.Call(context.Background(), http.MethodGet, "/api/schedules", nil, &out)
		all = out.Schedules
		for _, s := range out.Schedules {
			if s.ID == id && s.LastRun != nil {
				got = s
				return true
			}
		}
		return false
	}, "schedule %s: no run recorded (schedules: %v)", id, testkit.Later(func() any { return all }))
	return got
}

// scheduledMessages reads the thread's user_messages that came from a
// schedule.
func scheduledMessages(t *testing.T, api client.API, thread chat.ThreadID) []chat.UserMessage {
	t.Helper()
	var out struct {
		Events []struct {
			Type string `json:"type"`
			chat.UserMessage
		} `json:"events"`
	}
	if err := api.Call(context.Background(), http.MethodGet, "/api/threads/"+string(thread)+"/events", nil, &out); err != nil {
		t.Fatal(err)
	}
	var ms []chat.UserMessage
	for _, ev := range out.Events {
		if ev.Type == chat.TypeUserMessage && ev.Origin != nil {
			ms = append(ms, ev.UserMessage)
		}
	}
	return ms
}

// soon is an --at a few whole seconds ahead.
func soon(d time.Duration) string {
	return time.Now().Add(d).Truncate(time.Second).UTC().Format(time.RFC3339)
}

// A schedule --at a few seconds ahead runs the real Claude Code (against
// the scripted model API) once, in a thread of its own, as from the schedule.
func TestScheduleAtRunsClaudeCode(t *testing.T) {
	testkit.NeedsRealAgent(t)
	data, work, logFile := childDirs(t)
	home := filepath.Join(filepath.Dir(data), "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	model := claudeapi.Start(t, claudeapi.Scenario{Default: &claudeapi.Reply{Blocks: []claudeapi.Block{{Type: claudeapi.BlockText, Text: "Summary done."}}}})
	env := map[string]string{}
	for _, kv := range claudeapi.Env(t, model, home, work) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	ag, err := json.Marshal(map[string]any{"Command": testkit.ClaudeBin(t), "Env": env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, pid := range testkit.PIDsWithEnv("HOME="+home, "claude") {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	d := startChildTo(t, data, work, logFile, os.Stderr, childClaude+"="+string(ag))
	api := d.api()
	s := addSchedule(t, api, schedule.Spec{Agent: "echo", Cwd: work, At: soon(3 * time.Second), Name: "nightly",
		Text: "Summarise the day's commits"})
	ran := ranSchedule(t, api, s.ID, 60*time.Second)
	if ran.LastError != "" || ran.LastThread == "" || ran.NextRun != nil {
		t.Fatalf("after its run: %+v", ran)
	}
	turnEnded(t, api, ran.LastThread, 90*time.Second)
	ms := scheduledMessages(t, api, ran.LastThread)
	if len(ms) != 1 || ms[0].Text != "Summarise the day's commits" ||
		*ms[0].Origin != (chat.Origin{Kind: chat.OriginSchedule, ID: s.ID, Name: "nightly"}) {
		t.Fatalf("the thread's scheduled messages: %+v", ms)
	}
	asked := 0
	for _, r := range model.ScenarioRequests() {
		if strings.Contains(r.LastUserText(), "Summarise the day's commits") {
			asked++
		}
	}
	if asked != 1 {
		t.Fatalf("the model was asked %d times for the scheduled text, want 1", asked)
	}
}

// parley serve is killed with SIGKILL the moment a scheduled run is in
// its thread, before or after the runner recorded it: after the restart the
// run is recorded, and the agent got it at most once: its turn ended (the
// agent got it once), or, killed while it was being delivered, its receipt
// says the agent never got it, and the agent's log agrees.
func TestKill9AtScheduleDueMoment(t *testing.T) {
	t.Parallel()
	data, work, logFile := childDirs(t)
	first := startChild(t, data, work, logFile)
	c := first.dial(t, "sched")
	c.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypeReplayDone), "ready")
	c.Send(chatsock.Msg("m0", "say hello"))
	i := c.WaitFor(0, 10*time.Second, chatsock.PromptDone("m0", chat.StopEndTurn), "a thread to schedule into")
	thread := c.Get(i).Thread
	if thread == "" {
		t.Fatalf("no thread in %+v", c.Get(i))
	}
	s := addSchedule(t, first.api(), schedule.Spec{Agent: "echo", Cwd: work, Thread: thread, At: soon(2 * time.Second),
		Text: "say scheduled"})
	c.WaitFor(i, 30*time.Second, func(ev client.Event) bool {
		return ev.Type == chat.TypeUserMessage && chatsock.FieldOf(ev, "origin") != nil
	}, "the scheduled run in the thread")
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.cmd.Wait()

	second := startChild(t, data, work, logFile)
	ran := ranSchedule(t, second.api(), s.ID, 30*time.Second)
	if ran.LastThread != thread || ran.LastError != "" {
		t.Fatalf("after the restart: %+v, want the run recorded in %s", ran, thread)
	}
	// The run's last word. Its row may not have been kept before the kill:
	// the runner then sends the run again at the restart, with the same
	// id, and a run whose receipt proved the agent never got it is
	// delivered by that send, once. The run is recorded only once the router
	// has that send, so the thread's log holds it by now.
	isRun := func(ev client.Event) bool { return strings.HasPrefix(fmtField(ev, "message_id"), s.ID+"@") }
	r := second.dial(t, "sched")
	done := r.WaitFor(0, 30*time.Second, chatsock.Type(chat.TypeReplayDone), "the thread's log replayed")
	failedAt, sentAgain := -1, false
	for i, ev := range r.Snapshot()[:done] {
		if !isRun(ev) || ev.Type != chat.TypeDelivery {
			continue
		}
		switch fmtField(ev, "state") {
		case chat.DeliveryFailed:
			failedAt, sentAgain = i, false
		case chat.DeliveryQueued, chat.DeliveryDelivering:
			sentAgain = sentAgain || failedAt >= 0
		}
	}
	want := 1 // the agent got it once: its turn ends
	if failedAt >= 0 && !sentAgain {
		if detail := fmtField(r.Get(failedAt), "detail"); !strings.Contains(detail, "the agent never got it") {
			t.Fatalf("the scheduled run failed: %s", detail)
		}
		want = 0
	} else {
		r.WaitFor(0, 30*time.Second, func(ev client.Event) bool { return isRun(ev) && ev.Type == chat.TypePromptDone },
			"the scheduled run's turn ends")
	}
	if ms := scheduledMessages(t, second.api(), thread); len(ms) != 1 {
		t.Fatalf("%d scheduled messages in the thread, want 1: %+v", len(ms), ms)
	}
	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], s.ID+"@") {
			n++
		}
	}
	if n != want {
		t.Fatalf("the agent got the scheduled run %d times, want %d:\n%s", n, want, b)
	}
}

// fmtField is an event's string field, "" when it has none.
func fmtField(ev client.Event, name string) string {
	v, _ := chatsock.FieldOf(ev, name).(string)
	return v
}

// turnEnded waits until the thread's log holds a turn's end, and fails
// unless it ended the turn (end_turn).
func turnEnded(t *testing.T, api client.API, thread chat.ThreadID, within time.Duration) {
	t.Helper()
	reason := ""
	testkit.Eventually(t, within, func() bool {
		var out struct {
			Events []struct {
				Type string `json:"type"`
				chat.PromptDone
			} `json:"events"`
		}
		_ = api.Call(context.Background(), http.MethodGet, "/api/threads/"+string(thread)+"/events", nil, &out)
		for _, ev := range out.Events {
			if ev.Type == chat.TypePromptDone {
				reason = ev.StopReason
				return true
			}
		}
		return false
	}, "no turn ended in %s", thread)
	if reason != chat.StopEndTurn {
		t.Fatalf("the scheduled turn ended with %q, want end_turn", reason)
	}
}
