package geminiapi

import (
	"path/filepath"

	"github.com/parleyhq/parley/internal/testkit/standin"
)

// APIKey is the fake key the stand-in's environments carry. It is not a secret.
const APIKey = "parley-standin-gemini-key-0000000000000000"

// Env writes an isolated HOME for Gemini CLI at home (settings selecting the
// API-key auth type, telemetry and update checks off) and returns the
// environment (KEY=VALUE) that points Gemini CLI at srv. home must be absolute.
func Env(t TB, srv *Server, home string) []string {
	t.Helper()
	env, err := WriteHome(srv.URL, home)
	if err != nil {
		t.Fatalf("geminiapi: %v", err)
	}
	return env
}

// WriteHome is Env without a test: for commands and benchmarks.
func WriteHome(baseURL, home string) ([]string, error) {
	settings := map[string]any{
		// Without it: "Invalid auth method selected".
		"security":  map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
		"general":   map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
	}
	if err := standin.WriteConfig(filepath.Join(home, ".gemini", "settings.json"), settings); err != nil {
		return nil, err
	}
	return []string{
		"HOME=" + home,
		"GEMINI_API_KEY=" + APIKey,
		"GOOGLE_GEMINI_BASE_URL=" + baseURL,
		"GEMINI_CLI_TRUST_WORKSPACE=true",
		"NO_BROWSER=true",
	}, nil
}
