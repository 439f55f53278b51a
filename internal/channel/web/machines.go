// The cluster's machines, listed on its hub.

package web

import "net/http"

// handleNodes answers what `parley nodes` prints: the joined machines, and
// the hub's own count of threads beside them.
func (s *Server) handleNodes(w http.ResponseWriter, r *http.Request) {
	if s.opt.Cluster == nil {
		httpError(w, http.StatusNotFound, "this parley is not a cluster's hub: it has no machines to list")
		return
	}
	nodes, err := s.opt.Cluster.Machines(r.Context())
	if err != nil {
		httpError(w, http.StatusServiceUnavailable, "could not list the machines: "+err.Error())
		return
	}
	// The hub's own threads, counted as the directory counts a node's: every
	// one, archived too (the dashboard's list holds the unarchived only, and
	// an archived thread open on screen counted as none).
	ths, err := s.store.Threads(r.Context())
	if err != nil {
		httpError(w, http.StatusServiceUnavailable, "could not count the threads: "+err.Error())
		return
	}
	own := 0
	for _, th := range ths {
		if th.Node == "" {
			own++
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"nodes": nodes, "hub": map[string]any{"name": s.opt.Cluster.Node(), "threads": own}})
}
