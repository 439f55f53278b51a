package daemon

import (
	"context"
	"log/slog"

	"github.com/parleyhq/parley/internal/audit"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/remote"
	"github.com/parleyhq/parley/internal/ruleset"
	"github.com/parleyhq/parley/internal/store/sqlite"
)

// openRules opens the machine's approval rules: the config's, then those a
// person made (kept in st). At a cluster's hub (hub set) they reach the
// nodes' rules too.
func openRules(ctx context.Context, cfg config.Config, st *sqlite.Store, hub *remote.Hub, log *slog.Logger, trail audit.Log) (*ruleset.Set, error) {
	roots := func(agent string) []string { return agentRoots(cfg, agent) }
	opt := ruleset.Options{Config: cfg.Rules, Store: st, Node: cfg.Cluster.Node, Roots: roots,
		Logger: log.With("part", "rules"), Audit: trail}
	if hub != nil {
		opt.Remote = hub.Rules()
	}
	return ruleset.Open(ctx, opt)
}

// serveRules lets the hub reach this node's rules (link set): they stay
// here, answering this machine's cards with the hub away or not.
func serveRules(link *cluster.Link, set *ruleset.Set) error {
	if link == nil {
		return nil
	}
	return link.ServeRules(set.Serve)
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
