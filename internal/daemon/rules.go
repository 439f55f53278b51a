package daemon

import (
	"context"
	"log/slog"

	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/ruleset"
	"github.com/parleyhq/parley/internal/store/sqlite"
)

// openRules opens the machine's approval rules: the config's, then those a
// person made (kept in st).
func openRules(ctx context.Context, cfg config.Config, st *sqlite.Store, log *slog.Logger) (*ruleset.Set, error) {
	roots := func(agent string) []string { return agentRoots(cfg, agent) }
	return ruleset.Open(ctx, ruleset.Options{Config: cfg.Rules, Store: st, Node: cfg.Cluster.Node, Roots: roots,
		Logger: log.With("part", "rules")})
}

// agentRoots is where an agent may work: its own roots, else the machine's.
func agentRoots(cfg config.Config, agent string) []string {
	for _, a := range cfg.Agents {
		if a.ID == agent && len(a.Roots) > 0 {
			return a.Roots
		}
	}
	return cfg.Roots
}
