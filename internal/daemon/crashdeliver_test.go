package daemon_test

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

// childClaude gives the child daemon the real Claude Code (its command and
// environment as JSON) in place of the scripted agent.
const childClaude = "PARLEY_TEST_CHILD_CLAUDE"

// parley killed with SIGKILL right after a message went to the real Claude
// Code (its receipt "delivering"), and started again on its data. Claude Code
// outlives it (a process group of its own) and, its stdin closed, finishes
// what it took and exits; or (half the runs) it is killed with parley. The
// next start judges the message by Claude Code's transcript. Its receipt is
// never "failed" when the model stand-in was asked for it; judged at the
// restart, it is "submitted" exactly when the resumed conversation holds it;
// and a retry with the same id (the dashboard's Retry) never reaches the
// model a second time. One kill per run, at a random moment within a few
// milliseconds of "delivering"; make kill-cycles runs it CYCLES times and
// counts the RESULT lines.
func TestKill9WhileDelivering(t *testing.T) {
	t.Parallel()
	testkit.NeedsRealAgent(t)
	data, work, logFile := childDirs(t)
	home := filepath.Join(filepath.Dir(data), "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	api := claudeapi.Start(t, claudeapi.Scenario{Default: &claudeapi.Reply{Blocks: []claudeapi.Block{{Type: claudeapi.BlockText, Text: "An answer."}}}})
	env := map[string]string{}
	for _, kv := range claudeapi.Env(t, api, home, work) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	ag, err := json.Marshal(map[string]any{"Command": testkit.ClaudeBin(t), "Env": env})
	if err != nil {
		t.Fatal(err)
	}
	agents := func() []int { return testkit.PIDsWithEnv("HOME="+home, "claude") }
	t.Cleanup(func() {
		for _, pid := range agents() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	const wait = 60 * time.Second
	first := startChildTo(t, data, work, logFile, os.Stderr, childClaude+"="+string(ag))
	c := first.dial(t, "cut")
	c.WaitFor(0, wait, chatsock.Type(chat.TypeReplayDone), "ready")
	// A whole first turn: the thread knows Claude Code's session, whose
	// transcript the next start reads.
	c.Send(chatsock.Msg("m0", "a first message"))
	at := c.WaitFor(0, wait, chatsock.PromptDone("m0", chat.StopEndTurn), "a first turn")
	const text = "the message parley was delivering"
	c.Send(chatsock.Msg("m1", text))
	c.WaitFor(at, wait, chatsock.Delivery("m1", chat.DeliveryDelivering), "delivering")
	time.Sleep(time.Duration(rand.IntN(30)) * time.Millisecond) // where on the message's way the kill lands
	// Half the time Claude Code dies with parley, as a service manager that
	// kills the whole group does: what it had not kept is lost.
	withAgent := rand.IntN(2) == 0
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if withAgent {
		for _, pid := range agents() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	first.cmd.Wait()
	// The receipt the killed daemon had said last: "delivering" leaves it to
	// the next start to judge.
	said := ""
	for _, e := range c.Snapshot() {
		if e.Type == chat.TypeDelivery && chatsock.FieldOf(e, "message_id") == "m1" {
			said, _ = chatsock.FieldOf(e, "state").(string)
		}
	}
	// What Claude Code keeps, it has kept once it is gone.
	testkit.Eventually(t, wait, func() bool { return len(agents()) == 0 }, "Claude Code did not end after parley died")
	asked := func() int {
		n := 0
		for _, rq := range api.ScenarioRequests() {
			if strings.TrimSpace(rq.LastUserText()) == text {
				n++
			}
		}
		return n
	}
	askedBefore := asked()

	second := startChildTo(t, data, work, logFile, os.Stderr, childClaude+"="+string(ag))
	r := second.dial(t, "cut")
	i := r.WaitFor(0, wait, func(e client.Event) bool {
		if e.Type != chat.TypeDelivery || chatsock.FieldOf(e, "message_id") != "m1" {
			return false
		}
		st := chatsock.FieldOf(e, "state")
		return st == chat.DeliverySubmitted || st == chat.DeliveryFailed || st == chat.DeliveryUnknown
	}, "m1 judged")
	state, _ := chatsock.FieldOf(r.Get(i), "state").(string)
	// The dashboard's Retry sends the same id again; the next message shows
	// what the resumed conversation holds.
	r.Send(chatsock.Msg("m1", text))
	r.Send(chatsock.Msg("m2", "the next message"))
	r.WaitFor(i, wait, chatsock.PromptDone("m2", chat.StopEndTurn), "the next message")
	reqs := api.ScenarioRequests()
	kept := false
	for _, x := range reqs[len(reqs)-1].UserTexts() {
		kept = kept || strings.TrimSpace(x) == text
	}
	total := asked()
	t.Logf("RESULT state=%s said_before_kill=%s agent_killed=%v asked_before_restart=%d asked=%d kept=%v", state, said, withAgent, askedBefore, total, kept)
	if state == chat.DeliveryFailed && askedBefore > 0 {
		t.Errorf("false failed: the model was asked for m1 before the restart:\n%s", chatsock.Summary(r.Snapshot()))
	}
	if total > 1 {
		t.Errorf("m1 reached the model %d times", total)
	}
	if state == chat.DeliverySubmitted && askedBefore == 0 && !kept {
		t.Errorf("false submitted: the model never got m1 and the conversation does not hold it")
	}
	// Judged at the restart, by the transcript Claude Code left: submitted
	// exactly when a resumed session has it. (One the killed daemon had
	// already seen the model take stays submitted, kept or not.)
	if said == chat.DeliveryDelivering && (state == chat.DeliverySubmitted) != kept {
		t.Errorf("m1 judged %s at the restart, but the resumed conversation holds it: %v", state, kept)
	}
}
