package ruleset

import (
	"net/http"

	"github.com/parleyhq/parley/internal/channel/web"
)

// maxBody bounds a request's JSON.
const maxBody = 64 << 10

// Handle adds the rules' API (signed-in only: handle is the web channel's
// authenticated Handle).
func (s *Set) Handle(handle func(pattern string, h http.Handler)) {
	handle("GET /api/rules", http.HandlerFunc(s.handleList))
	handle("POST /api/rules", http.HandlerFunc(s.handleAdd))
	handle("POST /api/rules/test", http.HandlerFunc(s.handleTest))
	handle("PUT /api/rules/{id}", http.HandlerFunc(s.handleUpdate))
	handle("DELETE /api/rules/{id}", http.HandlerFunc(s.handleRemove))
}

func (s *Set) handleList(w http.ResponseWriter, _ *http.Request) {
	web.WriteJSON(w, http.StatusOK, map[string]any{"rules": s.List()})
}

func (s *Set) handleAdd(w http.ResponseWriter, req *http.Request) {
	var sp Spec
	if err := web.DecodeJSON(w, req, maxBody, &sp); err != nil {
		web.WriteError(w, err)
		return
	}
	e, err := s.Add(req.Context(), sp, web.CallerName(req.Context()))
	if err != nil {
		web.WriteError(w, err)
		return
	}
	web.WriteJSON(w, http.StatusOK, map[string]any{"rule": e})
}

func (s *Set) handleUpdate(w http.ResponseWriter, req *http.Request) {
	var sp Spec
	if err := web.DecodeJSON(w, req, maxBody, &sp); err != nil {
		web.WriteError(w, err)
		return
	}
	e, err := s.Update(req.Context(), req.PathValue("id"), sp)
	if err != nil {
		web.WriteError(w, err)
		return
	}
	web.WriteJSON(w, http.StatusOK, map[string]any{"rule": e})
}

func (s *Set) handleRemove(w http.ResponseWriter, req *http.Request) {
	if err := s.Remove(req.Context(), req.PathValue("id")); err != nil {
		web.WriteError(w, err)
		return
	}
	web.WriteJSON(w, http.StatusOK, map[string]any{})
}

func (s *Set) handleTest(w http.ResponseWriter, req *http.Request) {
	var p Probe
	if err := web.DecodeJSON(w, req, maxBody, &p); err != nil {
		web.WriteError(w, err)
		return
	}
	a, err := s.Test(p)
	if err != nil {
		web.WriteError(w, err)
		return
	}
	web.WriteJSON(w, http.StatusOK, a)
}
