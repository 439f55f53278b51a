package stream

import (
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

// TestModeSwitchedBackIsTheModeInForce: a person who switches modes quickly
// (plan, default, acceptEdits, default) is shown default at the end, and
// default is what Claude Code applies: a Bash command asks first. (In plan
// mode, Claude Code 2.1.197 runs the scripted Bash command without asking;
// changes sent back to back could leave it there while parley showed default.)
func TestModeSwitchedBackIsTheModeInForce(t *testing.T) {
	r := newRig(t, claudeapi.Scenario{Rules: []claudeapi.Rule{
		{Match: claudeapi.Match{Exact: "run it"}, Reply: claudeapi.Bash("touch made-by-bash", "Make a file")},
		{Match: claudeapi.Match{ToolResult: "Bash"}, Reply: claudeapi.Text("Done.", 1, 0)},
	}})
	s := r.start()
	r.prompt(s, "hello")
	r.sink.waitTurns(t, 1)
	for _, m := range []string{"plan", "default", "acceptEdits", "default"} {
		if err := s.SetMode(ctxT(t), m); err != nil {
			t.Fatalf("set mode %s: %v", m, err)
		}
	}
	ms := all[chat.Mode](r.sink)
	if got := ms[len(ms)-1].Current; got != "default" {
		t.Errorf("mode shown after the changes: got %q, want default", got)
	}
	r.prompt(s, "run it")
	testkit.Eventually(t, 30*time.Second, func() bool { return len(all[chat.PermissionRequest](r.sink)) > 0 || len(r.sink.turnsEnded()) >= 2 },
		"neither a card nor the turn's end")
	if len(all[chat.PermissionRequest](r.sink)) == 0 {
		t.Errorf("the Bash command ran without asking; mode events: %v", all[chat.Mode](r.sink))
	}
}
