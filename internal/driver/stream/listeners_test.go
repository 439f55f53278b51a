package stream

import (
	"slices"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

// Claude Code, started as parley starts it (stream-json) and through a turn,
// listens on nothing of its own: its process tree has no TCP or UDP
// listener (docs/agents.md, "Listeners of their own").
func TestClaudeCodeListensOnNothing(t *testing.T) {
	t.Parallel()
	r := newRig(t, claudeapi.Scenario{Rules: []claudeapi.Rule{
		{Match: claudeapi.Match{Exact: "say hi"}, Reply: claudeapi.Text(helloText, 1, 0)},
	}})
	s := r.start()
	check := func(when string) {
		pids := testkit.TreePIDs(s.Pid())
		if ls := testkit.Listeners(t, pids); len(ls) != 0 {
			t.Errorf("%s, Claude Code (processes %v) listens on %v: nothing is expected", when, pids, ls)
		}
	}
	check("after start")
	r.prompt(s, "say hi")
	if got, want := r.sink.waitTurns(t, 1), []string{chat.StopEndTurn}; !slices.Equal(got, want) {
		t.Fatalf("turns: got %v want %v", got, want)
	}
	check("after a turn")
}
