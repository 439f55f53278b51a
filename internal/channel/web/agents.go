// The agents a new thread may pick, and an agent's own sessions.

package web

import (
	"context"
	"net/http"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/driver"
)

func (s *Server) handleAgents(w http.ResponseWriter, r *http.Request) {
	body := map[string]any{"agents": s.agents(r.Context()), "default_agent": s.router.DefaultAgent()}
	if s.opt.Cluster != nil {
		body["node"] = s.opt.Cluster.Node() // this machine: a new thread naming it stays here
	}
	writeJSON(w, http.StatusOK, body)
}

// agents lists the agents a new thread may pick: this machine's, and on a
// cluster's hub every machine's, each with its node.
func (s *Server) agents(ctx context.Context) []chat.AgentInfo {
	own := s.router.Agents()
	if s.opt.Cluster == nil {
		return own
	}
	all, err := s.opt.Cluster.Agents(ctx, own)
	if err != nil {
		s.log.Warn("web: list the machines' agents", "err", err)
	}
	return all
}

func (s *Server) handleNativeSessions(w http.ResponseWriter, r *http.Request) {
	drv, ag, err := s.router.Driver(r.PathValue("id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	lister, ok := drv.(driver.SessionLister)
	if !ok {
		writeJSON(w, http.StatusOK, map[string]any{"sessions": []driver.NativeSession{}})
		return
	}
	cwd := r.URL.Query().Get("cwd")
	if cwd != "" {
		if cwd, err = config.Confine(cwd, ag.Roots); err != nil {
			writeErr(w, err)
			return
		}
	}
	sessions, err := lister.ListSessions(r.Context(), driver.Spec{AgentID: ag.ID, Command: ag.Command, Cwd: cwd, Env: envList(ag.Env)})
	if err != nil {
		writeErr(w, err)
		return
	}
	if sessions == nil {
		sessions = []driver.NativeSession{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": sessions})
}

func envList(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	return out
}
