//go:build e2e

package agents_test

import (
	"encoding/json"
	"testing"

	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/openaiapi"
)

// OpenCode over ACP, its model an OpenAI-compatible provider, bash and edits
// set to ask. It is slow to start (tens of seconds on two cores): the thread
// shows the start and messages wait for it, queued with that reason. Its
// question tool hangs under ACP (1.18.33), so it is left off: no questions.
func TestOpenCode(t *testing.T) {
	home, work := dirs(t)
	api := openaiapi.Start(t, openAIRules("bash", map[string]any{"command": shellLine, "description": "Make a file"}, "")...)
	cfg, err := json.Marshal(map[string]any{
		"provider": map[string]any{"standin": map[string]any{
			"npm":     "@ai-sdk/openai-compatible",
			"options": map[string]any{"baseURL": api.URL + "/v1", "apiKey": openaiapi.APIKey},
			"models":  map[string]any{"m1": map[string]any{"name": "m1", "tool_call": true}},
		}},
		"model": "standin/m1", "small_model": "standin/m1",
		// Without "ask", bash runs with no card.
		"permission": map[string]any{"bash": "ask", "edit": "ask"},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := start(t, agent{
		cfg: config.Agent{ID: "opencode", Transport: config.TransportACP, Command: testkit.OpenCodeBin(t), Args: []string{"acp"},
			Env: map[string]string{"HOME": home, "OPENCODE_CONFIG_CONTENT": string(cfg),
				"OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1",
				"OPENCODE_DISABLE_LSP_DOWNLOAD": "1", "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1"}},
		home: home, output: api.Outputs, userTexts: userTexts(api),
		shell: "bash", usage: true, slowStart: true, option: "mode", passwordServer: true,
	}, work)
	conversation(t, r)
}
