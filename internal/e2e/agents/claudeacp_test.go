//go:build e2e

package agents_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

// Claude through its ACP adapter (the agent Zed runs), in the mode that asks
// before commands. Its questions (AskUserQuestion) arrive as ACP form
// elicitations: a choice field and an "Other" box, shown as one question.
func TestClaudeACP(t *testing.T) {
	home, work := dirs(t)
	colour := map[string]any{"questions": []any{map[string]any{
		"question": question, "header": "Colour", "multiSelect": false,
		"options": []any{
			map[string]any{"label": "Blue", "description": "the sky"},
			map[string]any{"label": "Red", "description": "a rose"},
		},
	}}}
	api := claudeapi.Start(t, claudeapi.Scenario{Rules: []claudeapi.Rule{
		{Match: claudeapi.Match{Contains: recall}, Reply: claudeapi.Text(recalled, 1, 0)},
		{Match: claudeapi.Match{Contains: askAgain}, Reply: claudeapi.ToolUse("AskUserQuestion", colour)},
		{Match: claudeapi.Match{Contains: askMe}, Reply: claudeapi.ToolUse("AskUserQuestion", colour)},
		{Match: claudeapi.Match{ToolResult: "AskUserQuestion"}, Reply: claudeapi.Text("Thanks.", 1, 0)},
		{Match: claudeapi.Match{Contains: makeFile}, Reply: claudeapi.Bash(shellLine, "Make a file")},
		{Match: claudeapi.Match{ToolResult: "Bash"}, Reply: claudeapi.Text(toolDone, 1, 0)},
		{Match: claudeapi.Match{Contains: slowly}, Reply: claudeapi.Text(strings.Repeat("tick ", 300), 300, 50*time.Millisecond)},
		{Match: claudeapi.Match{Contains: sayHello}, Reply: claudeapi.Text(answer, 4, 0)},
	}})
	env := map[string]string{"PATH": testkit.Node22PATH(t)}
	for _, kv := range claudeapi.Env(t, api, home, work) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	if os.Geteuid() == 0 {
		// As root (CI), Claude Code refuses its permission bypass, which the
		// adapter sets up, unless it is told it runs in a sandbox.
		env["IS_SANDBOX"] = "1"
	}
	r := start(t, agent{
		cfg: config.Agent{ID: "claude-acp", Transport: config.TransportACP, Command: testkit.ClaudeACPBin(t),
			Env: env, Mode: "default"},
		home: home,
		output: func(tool string) []string {
			var out []string
			for _, id := range api.ToolUseIDs(tool) {
				if b, ok := api.ToolResult(id); ok {
					out = append(out, b.ResultText())
				}
			}
			return out
		},
		userTexts: func(text string) []string {
			reqs := api.ScenarioRequests()
			for i := len(reqs) - 1; i >= 0; i-- {
				if strings.Contains(reqs[i].LastUserText(), text) {
					return reqs[i].UserTexts()
				}
			}
			return nil
		},
		shell: "Bash", ask: "AskUserQuestion", usage: true, cost: true, option: "effort",
	}, work)
	conversation(t, r)
}
