//go:build e2e

package claude_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/rules"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

// The person's rules answer the real Claude Code's permission cards: a Bash
// call every part of which a rule allows runs with no one asked (the card
// is logged already answered "by rule 2"); one a deny matches is refused
// and the model is told which rule; one no rule matches waits for a person.
func TestRulesAnswerCards(t *testing.T) {
	sc := claudeapi.Scenario{Rules: []claudeapi.Rule{
		{Match: claudeapi.Match{Exact: "make it"}, Reply: claudeapi.Bash("touch made-by-rule && echo made", "Make a file")},
		{Match: claudeapi.Match{Exact: "remove it"}, Reply: claudeapi.Bash("rm -f made-by-rule", "Remove the file")},
		{Match: claudeapi.Match{Exact: "move it"}, Reply: claudeapi.Bash("mv made-by-rule elsewhere", "Move the file")},
		{Match: claudeapi.Match{ToolResult: "Bash"}, Reply: claudeapi.Text("Done with the command.", 1, 0)},
	}}
	r := newRig(t, sc, func(c *config.Config) {
		c.Rules = []rules.Rule{
			{Action: rules.Deny, Tool: "Bash", Command: "rm *"},
			{Action: rules.Allow, Tool: "Bash", Command: "touch *"},
			{Action: rules.Allow, Tool: "Bash", Command: "echo *"},
		}
	})
	s := r.dial("rules", -1)

	s.Send(chatsock.Msg("m1", "make it"))
	end := s.WaitFor(0, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "the allowed turn")
	res := resolutionOf(t, s.Snapshot()[:end])
	if res.By == nil || res.By.Channel != "rule" || res.By.Chat != "2" || res.Rule != `rule 2 (allow tool=Bash "touch *")` || res.OptionID != chat.OptionAllowOnce {
		t.Fatalf("the allowed card's answer: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(r.work, "made-by-rule")); err != nil {
		t.Fatalf("the allowed command did not run: %v", err)
	}

	s.Send(chatsock.Msg("m2", "remove it"))
	end2 := s.WaitFor(end, wait, chatsock.PromptDone("m2", chat.StopEndTurn), "the denied turn")
	res = resolutionOf(t, s.Snapshot()[end:end2])
	if res.By == nil || res.By.Chat != "1" || res.OptionID != chat.OptionRejectOnce || !strings.Contains(res.Message, "rule 1") {
		t.Fatalf("the denied card's answer: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(r.work, "made-by-rule")); err != nil {
		t.Fatal("the denied command ran")
	}
	var told bool
	for _, rq := range r.api.Requests() {
		for _, m := range rq.Messages {
			for _, c := range m.Content {
				told = told || c.Type == "tool_result" && strings.Contains(c.ResultText(), "denied by the person's rule 1")
			}
		}
	}
	if !told {
		t.Fatal("the model was not told which rule denied the call")
	}

	// No rule: the card stays open for a person.
	s.Send(chatsock.Msg("m3", "move it"))
	i, rid := permissionCard(t, s, end2)
	for _, e := range s.Snapshot()[i:] {
		if e.Type == chat.TypePermissionResolved {
			t.Fatalf("a card no rule matches was answered: %s", e.Raw)
		}
	}
	s.Send(map[string]any{"type": "permission_response", "request_id": rid, "option_id": chat.OptionRejectOnce})
	s.WaitFor(i, wait, chatsock.PromptDone("m3", chat.StopEndTurn), "the asked turn")
}

// resolutionOf is the one permission card's answer among events.
func resolutionOf(t *testing.T, events []client.Event) chat.PermissionResolved {
	t.Helper()
	var out []chat.PermissionResolved
	for _, e := range events {
		if e.Type == chat.TypePermissionResolved {
			var p chat.PermissionResolved
			e.Decode(&p)
			out = append(out, p)
		}
	}
	if len(out) != 1 {
		t.Fatalf("%d permission answers, want 1", len(out))
	}
	return out[0]
}
