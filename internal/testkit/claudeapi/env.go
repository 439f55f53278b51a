package claudeapi

import (
	"path/filepath"

	"github.com/parleyhq/parley/internal/testkit/standin"
)

// APIKey is the fake key the stand-in's environments carry. It is not a secret.
const APIKey = "sk-ant-api03-parley-standin-key-0000000000000000"

// Env writes an isolated HOME for Claude Code at home, with the first-run file
// that skips onboarding, approves APIKey and trusts cwd, and returns the
// environment (KEY=VALUE) that points Claude Code at srv. home and cwd must be
// absolute. The result is meant to be appended to a minimal base environment.
func Env(t TB, srv *Server, home, cwd string) []string {
	t.Helper()
	env, err := WriteHome(srv.URL, home, cwd)
	if err != nil {
		t.Fatalf("claudeapi: %v", err)
	}
	return env
}

// WriteHome is Env without a test: for commands and benchmarks.
func WriteHome(baseURL, home string, cwds ...string) ([]string, error) {
	projects := map[string]any{}
	for _, c := range cwds {
		projects[c] = map[string]any{"hasTrustDialogAccepted": true}
		// Claude Code may see the cwd through symlinks resolved.
		if r, err := filepath.EvalSymlinks(c); err == nil && r != c {
			projects[r] = map[string]any{"hasTrustDialogAccepted": true}
		}
	}
	cfg := map[string]any{
		"hasCompletedOnboarding": true,
		"theme":                  "dark",
		"customApiKeyResponses":  map[string]any{"approved": []string{APIKey[len(APIKey)-20:]}, "rejected": []string{}},
		"projects":               projects,
	}
	if err := standin.WriteConfig(filepath.Join(home, ".claude.json"), cfg); err != nil {
		return nil, err
	}
	return []string{
		"HOME=" + home,
		"ANTHROPIC_BASE_URL=" + baseURL,
		"ANTHROPIC_API_KEY=" + APIKey,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
	}, nil
}
