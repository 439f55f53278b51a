package claudecode

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ConfigDir is Claude Code's config folder, where its transcripts live, for a
// process started with env added to parley's own (KEY=VALUE; the last one
// wins): CLAUDE_CONFIG_DIR, else $HOME/.claude.
func ConfigDir(env []string) (string, error) {
	look := func(key string) string {
		for i := len(env) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(env[i], key+"="); ok {
				return v
			}
		}
		return os.Getenv(key)
	}
	if d := look("CLAUDE_CONFIG_DIR"); d != "" {
		return d, nil
	}
	home := look("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no home folder: %w", err)
		}
		home = h
	}
	return filepath.Join(home, ".claude"), nil
}
