package acp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/parleyhq/parley/internal/driver"
)

// Gemini CLI (0.61.0) deletes sessions at start-up (general.sessionRetention,
// on by default): a session resumed in a later minute than it began leaves a
// second file with its short id, which the clean-up finds unreadable, and it
// deletes every file with that short id, the real transcript too. A Gemini
// parley starts must never do that to a person's session, so it runs with
// system settings (the highest precedence Gemini has) that are the machine's
// own with that clean-up turned off. A person's own `gemini` keeps the
// default and can still do it (docs/agents.md says so).

// systemSettingsEnv is Gemini CLI's variable naming its system settings file.
const systemSettingsEnv = "GEMINI_CLI_SYSTEM_SETTINGS_PATH"

// isGemini reports whether spec starts Gemini CLI.
func isGemini(spec driver.Spec) bool {
	return strings.TrimSuffix(filepath.Base(spec.Command), ".js") == "gemini"
}

// geminiEnv is what spec's environment gains for Gemini CLI: its system
// settings, written under dir (parley's own cache), with the session
// clean-up off.
func geminiEnv(spec driver.Spec, dir string) ([]string, error) {
	src := lookupEnv(spec.Env, systemSettingsEnv)
	if src == "" {
		src = "/etc/gemini-cli/settings.json"
		if runtime.GOOS == "darwin" {
			src = "/Library/Application Support/GeminiCli/settings.json"
		}
	}
	settings := map[string]any{}
	switch b, err := os.ReadFile(src); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("acp: Gemini's system settings %s: %w", src, err)
	default:
		if err := json.Unmarshal(b, &settings); err != nil {
			return nil, fmt.Errorf("acp: Gemini's system settings %s are not JSON: %w", src, err)
		}
	}
	general, _ := settings["general"].(map[string]any)
	if general == nil {
		general = map[string]any{}
	}
	retention, _ := general["sessionRetention"].(map[string]any)
	if retention == nil {
		retention = map[string]any{}
	}
	retention["enabled"] = false
	general["sessionRetention"] = retention
	settings["general"] = general
	b, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("acp: %w", err)
	}
	f, err := os.CreateTemp(dir, "gemini-system-settings-*.json")
	if err != nil {
		return nil, fmt.Errorf("acp: %w", err)
	}
	name := f.Name()
	_, werr := f.Write(b)
	if err := errors.Join(werr, f.Close()); err != nil {
		os.Remove(name)
		return nil, fmt.Errorf("acp: %w", err)
	}
	// One file for every start: the newest replaces it whole.
	final := filepath.Join(dir, "gemini-system-settings.json")
	if err := os.Rename(name, final); err != nil {
		os.Remove(name)
		return nil, fmt.Errorf("acp: %w", err)
	}
	return []string{systemSettingsEnv + "=" + final}, nil
}

// withGeminiSettings is spec with geminiEnv added when it starts Gemini CLI:
// every Gemini parley starts, a session's or a listing's.
func withGeminiSettings(spec driver.Spec) (driver.Spec, error) {
	if !isGemini(spec) {
		return spec, nil
	}
	dir, err := settingsDir()
	if err != nil {
		return spec, err
	}
	env, err := geminiEnv(spec, dir)
	if err != nil {
		return spec, err
	}
	spec.Env = append(slices.Clip(spec.Env), env...)
	return spec, nil
}

// lookupEnv is key's value in env (KEY=VALUE, the last one wins), else in
// parley's own environment.
func lookupEnv(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return os.Getenv(key)
}

// settingsDir is where parley keeps the settings files it gives agents.
func settingsDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("acp: no cache folder for Gemini's settings: %w", err)
	}
	return filepath.Join(d, "parley", "agents"), nil
}
