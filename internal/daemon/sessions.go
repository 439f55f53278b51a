package daemon

import (
	"cmp"
	"context"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/driver/claudecode"
	"github.com/parleyhq/parley/internal/sessions"
	"github.com/parleyhq/parley/internal/store"
)

// openSessions opens the index of the agents' own sessions on this machine
// (sessions.db in the data dir), inside the config's roots. The sessions
// parley's threads hold (their agent session id) are left out of a listing.
func openSessions(cfg config.Config, st store.Store, log *slog.Logger) (*sessions.Index, error) {
	var srcs []sessions.Source
	if dir, err := claudecode.ConfigDir(nil); err == nil {
		srcs = append(srcs, sessions.Claude{Dir: dir})
	}
	home, _ := os.UserHomeDir() // $HOME
	if home != "" || os.Getenv("CODEX_HOME") != "" {
		srcs = append(srcs, sessions.Codex{Dir: cmp.Or(os.Getenv("CODEX_HOME"), filepath.Join(home, ".codex"))})
	}
	if h := cmp.Or(os.Getenv("GEMINI_CLI_HOME"), home); h != "" {
		srcs = append(srcs, sessions.Gemini{Dir: filepath.Join(h, ".gemini")})
	}
	x, err := sessions.Open(cfg.DataDir, cfg.Roots, srcs...)
	if err != nil {
		return nil, err
	}
	x.SetLogger(log)
	x.SetNode(cfg.Cluster.Node)
	x.SetHeld(func(ctx context.Context) (map[string]bool, error) {
		threads, err := st.Threads(ctx)
		if err != nil {
			return nil, err
		}
		held := make(map[string]bool, len(threads))
		for _, th := range threads {
			if th.SessionID != "" {
				held[th.SessionID] = true
			}
		}
		return held, nil
	})
	return x, nil
}
