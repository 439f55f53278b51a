package daemon

import (
	"cmp"
	"context"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/claudecode"
	"github.com/parleyhq/parley/internal/sessions"
	"github.com/parleyhq/parley/internal/store"
)

// openSessions opens the index of the agents' own sessions on this machine
// (sessions.db in the data dir), inside the config's roots. The sessions
// parley's threads hold (their agent session id) are left out of a listing.
func openSessions(cfg config.Config, home string, drivers map[string]driver.Driver, st store.Store, log *slog.Logger) (*sessions.Index, error) {
	srcs := append(agentSessionSources(home), acpSessionSources(cfg, drivers, log)...)
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

// agentSessionSources are the agents' session folders in home, or with home
// "" where the agents themselves look ($HOME and their own variables).
func agentSessionSources(home string) []sessions.Source {
	if home != "" {
		return []sessions.Source{sessions.Claude{Dir: filepath.Join(home, ".claude")},
			sessions.Codex{Dir: filepath.Join(home, ".codex")}, sessions.Gemini{Dir: filepath.Join(home, ".gemini")}}
	}
	var srcs []sessions.Source
	if dir, err := claudecode.ConfigDir(nil); err == nil {
		srcs = append(srcs, sessions.Claude{Dir: dir})
	}
	home, _ = os.UserHomeDir() // $HOME
	if home != "" || os.Getenv("CODEX_HOME") != "" {
		srcs = append(srcs, sessions.Codex{Dir: cmp.Or(os.Getenv("CODEX_HOME"), filepath.Join(home, ".codex"))})
	}
	if h := cmp.Or(os.Getenv("GEMINI_CLI_HOME"), home); h != "" {
		srcs = append(srcs, sessions.Gemini{Dir: filepath.Join(h, ".gemini")})
	}
	return srcs
}

// allSessions is the ACP driver's session/list of every session.
type allSessions interface {
	AllSessions(ctx context.Context, spec driver.Spec) ([]driver.NativeSession, error)
}

// acpSessionSources ask the configured ACP agents for their sessions
// (session/list), but Gemini CLI's and Codex's: their files are read
// (Gemini CLI cannot list over ACP; Codex's files say the same, without
// starting it).
func acpSessionSources(cfg config.Config, drivers map[string]driver.Driver, log *slog.Logger) []sessions.Source {
	lister, ok := drivers[config.TransportACP].(allSessions)
	if !ok || len(cfg.Roots) == 0 {
		return nil
	}
	var out []sessions.Source
	for _, a := range cfg.Agents {
		if a.Transport != config.TransportACP || a.Disabled {
			continue
		}
		switch filepath.Base(a.Command) {
		case "gemini", "codex-acp":
			continue
		}
		env := make([]string, 0, len(a.Env))
		for k, v := range a.Env {
			env = append(env, k+"="+v)
		}
		spec := driver.Spec{AgentID: a.ID, Command: a.Command, Args: a.Args, Env: env, Cwd: cmp.Or(append(a.Roots, cfg.Roots...)...),
			Options: a.Options, Logger: log}
		out = append(out, sessions.NewACP(a.ID, func(ctx context.Context) ([]driver.NativeSession, error) {
			return lister.AllSessions(ctx, spec)
		}))
	}
	return out
}

// hubSessions is a cluster's hub as sessions.Hub asks it.
type hubSessions struct{ hub *cluster.Hub }

func (h hubSessions) Nodes(ctx context.Context) ([]sessions.RemoteNode, error) {
	nodes, err := h.hub.Nodes(ctx)
	out := make([]sessions.RemoteNode, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, sessions.RemoteNode{Name: n.Name, Online: n.Online})
	}
	return out, err
}

func (h hubSessions) NodeSessions(ctx context.Context, node string, f sessions.Filter) ([]sessions.Session, error) {
	return h.hub.NodeSessions(ctx, node, f)
}
