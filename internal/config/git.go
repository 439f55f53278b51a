package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Git is the [git] table: how parley treats a thread's repository.
type Git struct {
	// Worktrees is the folder a thread's own worktree is made in; "" is
	// <repo>/../<repo>.parley-worktrees (internal/gitwork).
	Worktrees string `toml:"worktrees"`
}

// check validates [git]: the worktrees' folder is absolute (~ is the home).
func (g *Git) check() []error {
	if g.Worktrees == "" {
		return nil
	}
	if rest, ok := strings.CutPrefix(g.Worktrees, "~"); ok && (rest == "" || rest[0] == '/') {
		home, err := os.UserHomeDir()
		if err != nil {
			return []error{fmt.Errorf("git.worktrees %q: no home directory: %v", g.Worktrees, err)}
		}
		g.Worktrees = filepath.Join(home, rest)
	}
	if !filepath.IsAbs(g.Worktrees) {
		return []error{fmt.Errorf("git.worktrees %q: want an absolute path (or one starting with ~/)", g.Worktrees)}
	}
	g.Worktrees = filepath.Clean(g.Worktrees)
	return nil
}
