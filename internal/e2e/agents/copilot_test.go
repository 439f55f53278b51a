//go:build e2e

package agents_test

import (
	"testing"

	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/openaiapi"
)

// GitHub Copilot CLI over ACP with a bring-your-own-key provider (the
// stand-in) and no GitHub login. It reports usage (usage_update, and tokens
// on each turn's answer) and its mode and "Allow All" as config options.
func TestCopilot(t *testing.T) {
	home, work := dirs(t)
	api := openaiapi.Start(t, openAIRules("bash", map[string]any{"command": shellLine, "description": "Make a file"}, "")...)
	r := start(t, agent{
		cfg: config.Agent{ID: "copilot", Transport: config.TransportACP, Command: testkit.CopilotBin(t), Args: []string{"--acp"},
			Env: map[string]string{"HOME": home, "COPILOT_OFFLINE": "true",
				"COPILOT_PROVIDER_BASE_URL": api.URL + "/v1", "COPILOT_PROVIDER_API_KEY": openaiapi.APIKey, "COPILOT_MODEL": "m1"}},
		home: home, output: api.Outputs, userTexts: userTexts(api),
		shell: "bash", usage: true, option: "allow_all",
	}, work)
	conversation(t, r)
}
