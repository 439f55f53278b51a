package acp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/driver"
)

// The Gemini parley starts keeps the machine's system settings, with the
// session clean-up that can delete a resumed session turned off on top.
func TestGeminiRunsWithTheSessionCleanUpOff(t *testing.T) {
	dir := t.TempDir()
	own := filepath.Join(dir, "own.json")
	if err := os.WriteFile(own, []byte(`{"ui":{"theme":"x"},"general":{"vimMode":true,"sessionRetention":{"enabled":true,"maxAge":"10d"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	spec := driver.Spec{Command: "/opt/bin/gemini", Env: []string{systemSettingsEnv + "=" + own}}
	if !isGemini(spec) || isGemini(driver.Spec{Command: "codex-acp"}) {
		t.Fatal("isGemini does not tell Gemini CLI by its command")
	}
	env, err := geminiEnv(spec, filepath.Join(dir, "cache"))
	if err != nil {
		t.Fatal(err)
	}
	path, ok := strings.CutPrefix(env[len(env)-1], systemSettingsEnv+"=")
	if !ok || path == own {
		t.Fatalf("env %q: want %s naming parley's own file", env, systemSettingsEnv)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		UI      map[string]any `json:"ui"`
		General struct {
			VimMode          bool           `json:"vimMode"`
			SessionRetention map[string]any `json:"sessionRetention"`
		} `json:"general"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.General.SessionRetention["enabled"] != false || got.General.SessionRetention["maxAge"] != "10d" || !got.General.VimMode || got.UI["theme"] != "x" {
		t.Fatalf("settings parley gives Gemini: %s", b)
	}
}
