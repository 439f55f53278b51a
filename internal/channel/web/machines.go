// The cluster's machines, listed on its hub.

package web

import "net/http"

// handleNodes answers what `parley nodes` prints: the joined machines.
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
	writeJSON(w, http.StatusOK, map[string]any{"nodes": nodes})
}
