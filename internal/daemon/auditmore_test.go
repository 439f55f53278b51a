package daemon_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/audit"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/schedule"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/trigger"
)

// Besides messages and cards, the trail answers who committed and pushed a
// thread's work, who added or removed a schedule or a trigger, and when the
// config file parley read changed: each entry names who (the device, or the
// token: the CLI), the thread and what was done, never a commit's message, a
// schedule's text or a trigger's template.
func TestAuditRecordsGitSchedulesTriggersAndConfig(t *testing.T) {
	gitEnv(t) // t.Setenv: this test is not parallel
	cfgFile := filepath.Join(t.TempDir(), "config.toml")
	writeFile(t, cfgFile, "log_level = \"info\"\n")
	e := startDaemon(t, func(c *config.Config) {
		loaded, err := config.Load(cfgFile, *c)
		if err != nil {
			t.Fatal(err)
		}
		*c = loaded
	})
	tok := e.d.Token()
	var pc pairCode
	if st := e.call("POST", "/api/pair-codes", tok, map[string]string{"name": "phone"}, &pc); st != 200 {
		t.Fatalf("pair code: %d", st)
	}
	var paired struct {
		DeviceID string `json:"device_id"`
		Token    string `json:"token"`
	}
	if st := e.call("POST", "/api/pair", "", map[string]string{"code": pc.Code}, &paired); st != 200 {
		t.Fatalf("pair: %d", st)
	}
	dev := audit.ActorDevice + paired.DeviceID

	proj := filepath.Join(e.root, "proj")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	gitIn(t, proj, "init", "-q", "-b", "main")
	writeFile(t, filepath.Join(proj, "a.txt"), "one\n")
	gitIn(t, proj, "add", "-A")
	gitIn(t, proj, "commit", "-qm", "first")
	bare := filepath.Join(t.TempDir(), "origin.git")
	gitIn(t, proj, "init", "-q", "--bare", bare)
	gitIn(t, proj, "remote", "add", "origin", bare)
	c := e.dial("proj", -1)
	c.WaitFor(0, 10*time.Second, chatsock.Type(chat.TypeReplayDone), "ready")
	c.Send(map[string]any{"type": "message", "message_id": "m1", "text": "hello",
		"intent": map[string]any{"new": map[string]any{"cwd": proj, "agent": "echo"}}})
	th := string(c.Get(c.WaitFor(0, 10*time.Second, chatsock.PromptDone("m1", chat.StopEndTurn), "the first turn")).Thread)

	writeFile(t, filepath.Join(proj, "a.txt"), "two\n")
	if st := e.call("POST", "/api/threads/"+th+"/commit", paired.Token, map[string]any{"message": "secret words"}, nil); st != 200 {
		t.Fatalf("commit: %d", st)
	}
	commit := gitIn(t, proj, "rev-parse", "HEAD")
	if st := e.api("POST", "/api/threads/"+th+"/push", map[string]any{}, nil); st != 200 {
		t.Fatalf("push: %d", st)
	}
	var sched struct{ Schedule schedule.Schedule }
	if st := e.call("POST", "/api/schedules", paired.Token, schedule.Spec{Name: "nightly", Agent: "echo", Cwd: proj, Every: "1h", Text: "secret words"}, &sched); st != 200 {
		t.Fatalf("add a schedule: %d", st)
	}
	sid := sched.Schedule.ID
	if st := e.call("POST", "/api/schedules/"+sid+"/pause", paired.Token, nil, nil); st != 200 {
		t.Fatalf("pause: %d", st)
	}
	if st := e.api("DELETE", "/api/schedules/"+sid, nil, nil); st != 200 {
		t.Fatalf("remove a schedule: %d", st)
	}
	var trg struct{ Trigger trigger.Trigger }
	if st := e.api("POST", "/api/triggers", trigger.Spec{Agent: "echo", Cwd: proj, Template: "secret words {{.x}}"}, &trg); st != 200 {
		t.Fatalf("add a trigger: %d", st)
	}
	if st := e.call("DELETE", "/api/triggers/"+trg.Trigger.ID, paired.Token, nil, nil); st != 200 {
		t.Fatalf("remove a trigger: %d", st)
	}

	// Started again on the same file, then on an edited one: one more entry.
	e.stop()
	e.start()
	e.stop()
	writeFile(t, cfgFile, "log_level = \"debug\"\n")
	loaded, err := config.Load(cfgFile, e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.cfg = loaded
	e.start()

	var all struct{ Entries []audit.Entry }
	if st := e.getJSON("/api/audit", &all); st != 200 {
		t.Fatalf("GET /api/audit: %d", st)
	}
	var got []string
	for _, en := range all.Entries {
		if en.Kind == audit.KindPair || en.Kind == audit.KindMessageSent {
			continue
		}
		line := en.Kind + " by " + en.Actor + ": " + en.Subject
		if en.Thread != "" {
			line += " [" + en.Thread + "]"
		}
		got = append(got, line)
		if strings.Contains(en.Subject+string(en.Detail), "secret words") {
			t.Errorf("entry %d holds a person's text: %s %s", en.Seq, en.Subject, en.Detail)
		}
	}
	want := []string{
		"config.change by parley: config file " + cfgFile + " read",
		"git.commit by " + dev + ": commit " + commit + " on main [" + th + "]",
		"git.push by token: branch main pushed to origin [" + th + "]",
		"schedule.change by " + dev + ": schedule " + sid + " added",
		"schedule.change by " + dev + ": schedule " + sid + " paused",
		"schedule.change by token: schedule " + sid + " removed",
		"trigger.change by token: trigger " + trg.Trigger.ID + " added",
		"trigger.change by " + dev + ": trigger " + trg.Trigger.ID + " removed",
		"config.change by parley: config file " + cfgFile + " changed since parley last read it",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the trail:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var byKind struct{ Entries []audit.Entry }
	e.getJSON("/api/audit?kind="+audit.KindConfigChange, &byKind)
	if len(byKind.Entries) != 2 || byKind.Entries[1].Kind != audit.KindConfigChange {
		t.Fatalf("?kind=%s: %d entries, want the 2 config changes", audit.KindConfigChange, len(byKind.Entries))
	}
}
