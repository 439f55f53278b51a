package claudecode

import (
	"encoding/json"
	"testing"
)

// "Allow always" says what Claude Code's permission suggestions do.
func TestSuggestionLabel(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ raw, want string }{
		{`[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"npm test:*"}],"behavior":"allow","destination":"localSettings"}]`,
			"Allow, and allow Bash(npm test:*) in this project (.claude/settings.local.json)"},
		{`[{"type":"setMode","mode":"acceptEdits","destination":"session"}]`, "Allow, and switch to Accept edits mode for this session"},
		{`[{"type":"addDirectories","directories":["/srv/x"],"destination":"session"},{"type":"setMode","mode":"acceptEdits","destination":"session"}]`,
			"Allow, and allow access to /srv/x for this session; switch to Accept edits mode for this session"},
		{`[]`, ""},
		{``, ""},
		{`{"not":"a list"}`, ""},
	} {
		if got := SuggestionLabel(json.RawMessage(tt.raw)); got != tt.want {
			t.Errorf("SuggestionLabel(%s) = %q, want %q", tt.raw, got, tt.want)
		}
	}
}
