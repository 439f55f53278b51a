//go:build e2e

package agents_test

import (
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/openaiapi"
)

// openAIRules is the conversation's script in OpenAI Chat Completions, with
// the agent's own names for its shell and question tools ("": it cannot ask)
// and their arguments.
func openAIRules(shell string, shellArgs map[string]any, ask string) []openaiapi.Rule {
	colour := map[string]any{"questions": []any{map[string]any{
		"question": question, "header": "Colour", "multiSelect": false,
		"options": []any{
			map[string]any{"label": "Blue", "description": "the sky"},
			map[string]any{"label": "Red", "description": "a rose"},
		},
	}}}
	rules := []openaiapi.Rule{{Contains: recall, Reply: openaiapi.Reply{Text: recalled}}}
	if ask != "" {
		rules = append(rules,
			openaiapi.Rule{Contains: askAgain, Reply: openaiapi.Reply{Call: ask, Args: colour}},
			openaiapi.Rule{Contains: askMe, Reply: openaiapi.Reply{Call: ask, Args: colour}},
			openaiapi.Rule{Output: ask, Reply: openaiapi.Reply{Text: "Thanks."}})
	}
	return append(rules, []openaiapi.Rule{
		{Contains: makeFile, Reply: openaiapi.Reply{Call: shell, Args: shellArgs}},
		{Output: shell, Reply: openaiapi.Reply{Text: toolDone}},
		{Contains: slowly, Reply: openaiapi.Reply{Text: strings.Repeat("tick ", 300), Chunks: 300, Delay: 50 * time.Millisecond}},
		{Contains: sayHello, Reply: openaiapi.Reply{Text: answer, Chunks: 4}},
	}...)
}

// userTexts reads the person's texts from the newest request about text.
func userTexts(api *openaiapi.Server) func(string) []string {
	return func(text string) []string {
		reqs := api.Requests()
		for i := len(reqs) - 1; i >= 0; i-- {
			texts := reqs[i].UserTexts()
			if len(texts) > 0 && strings.Contains(texts[len(texts)-1], text) {
				return texts
			}
		}
		return nil
	}
}

// Qwen Code over ACP, with the approval mode that asks before shell commands.
// Its questions come as permission requests of their own dialect and are
// shown as parley's ordinary question card.
func TestQwenCode(t *testing.T) {
	home, work := dirs(t)
	api := openaiapi.Start(t, openAIRules("run_shell_command", map[string]any{"command": shellLine, "description": "Make a file"}, "ask_user_question")...)
	r := start(t, agent{
		cfg: config.Agent{ID: "qwen", Transport: config.TransportACP, Command: testkit.QwenBin(t),
			Args: []string{"--acp", "--auth-type", "openai", "--approval-mode", "default"},
			Env: map[string]string{"HOME": home, "PATH": testkit.Node22PATH(t),
				"OPENAI_API_KEY": openaiapi.APIKey, "OPENAI_BASE_URL": api.URL + "/v1", "OPENAI_MODEL": "m1"}},
		home: home, proc: "qwen",
		output: api.Outputs, userTexts: userTexts(api),
		shell: "run_shell_command", ask: "ask_user_question", unknown: "craft/drainMidTurnQueue", usage: true,
	}, work)
	conversation(t, r)
}
