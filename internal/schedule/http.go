package schedule

import (
	"net/http"

	"github.com/parleyhq/parley/internal/channel/web"
)

// maxBody bounds a request's JSON: room for the longest text, escaped.
const maxBody = 8*MaxText + 4096

// Handle adds the schedules' API (signed-in only: handle is the web
// channel's authenticated Handle).
func (r *Runner) Handle(handle func(pattern string, h http.Handler)) {
	handle("GET /api/schedules", http.HandlerFunc(r.handleList))
	handle("POST /api/schedules", http.HandlerFunc(r.handleAdd))
	handle("POST /api/schedules/{id}/pause", r.handlePause(true))
	handle("POST /api/schedules/{id}/resume", r.handlePause(false))
	handle("DELETE /api/schedules/{id}", http.HandlerFunc(r.handleRemove))
}

func (r *Runner) handleList(w http.ResponseWriter, req *http.Request) {
	all, unlisted, err := r.listAll(req.Context())
	if err != nil {
		web.WriteRemoteError(w, err)
		return
	}
	out := map[string]any{"schedules": all}
	if len(unlisted) > 0 {
		out["unlisted"] = unlisted
	}
	web.WriteJSON(w, http.StatusOK, out)
}

func (r *Runner) handleAdd(w http.ResponseWriter, req *http.Request) {
	var sp Spec
	if err := web.DecodeJSON(w, req, maxBody, &sp); err != nil {
		web.WriteError(w, err)
		return
	}
	s, existed, err := r.addAt(req.Context(), sp)
	if err != nil {
		web.WriteRemoteError(w, err)
		return
	}
	if existed {
		// The same add sent again: answered as the first try's, not a change.
		web.WriteJSON(w, http.StatusOK, map[string]any{"schedule": s, "existed": true})
		return
	}
	r.record(req.Context(), "added", s)
	web.WriteJSON(w, http.StatusOK, map[string]any{"schedule": s})
}

func (r *Runner) handlePause(paused bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		s, err := r.pauseAt(req.Context(), req.PathValue("id"), paused)
		if err != nil {
			web.WriteRemoteError(w, err)
			return
		}
		r.record(req.Context(), map[bool]string{true: "paused", false: "resumed"}[paused], s)
		web.WriteJSON(w, http.StatusOK, map[string]any{"schedule": s})
	})
}

func (r *Runner) handleRemove(w http.ResponseWriter, req *http.Request) {
	if err := r.removeAt(req.Context(), req.PathValue("id")); err != nil {
		web.WriteRemoteError(w, err)
		return
	}
	machine, _, _ := r.elsewhere(req.PathValue("id"))
	r.record(req.Context(), "removed", Schedule{ID: req.PathValue("id"), Node: machine})
	web.WriteJSON(w, http.StatusOK, map[string]any{})
}
