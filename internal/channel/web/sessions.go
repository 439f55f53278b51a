// The agents' own sessions (GET /api/sessions): this machine's, or at a
// cluster's hub every machine's.

package web

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/parleyhq/parley/internal/sessions"
)

// Sessions lists the agents' own sessions: this machine's (sessions.Index),
// or at a cluster's hub every machine's.
type Sessions interface {
	Listing(ctx context.Context, f sessions.Filter) (sessions.Listing, error)
}

// handleSessions lists the agent sessions on the machines, newest first:
// ?agent= one agent's, ?machine= one machine's, ?all=1 those parley's
// threads hold too.
func (s *Server) handleSessions(w http.ResponseWriter, r *http.Request) {
	if s.opt.Sessions == nil {
		writeJSON(w, http.StatusOK, sessions.Listing{Sessions: []sessions.Session{}})
		return
	}
	q := r.URL.Query()
	f := sessions.Filter{Agent: q.Get("agent"), Machine: q.Get("machine")}
	if a := q.Get("all"); a != "" {
		all, err := strconv.ParseBool(a)
		if err != nil {
			httpError(w, http.StatusBadRequest, "all must be true or false, not "+strconv.Quote(a))
			return
		}
		f.All = all
	}
	l, err := s.opt.Sessions.Listing(r.Context(), f)
	if errors.Is(err, sessions.ErrNoMachine) {
		httpError(w, http.StatusNotFound, err.Error())
		return
	}
	if err != nil {
		httpError(w, http.StatusServiceUnavailable, "could not list the sessions: "+err.Error())
		return
	}
	if l.Sessions == nil {
		l.Sessions = []sessions.Session{}
	}
	writeJSON(w, http.StatusOK, l)
}
