package ruleset

import (
	"net/http"

	"github.com/parleyhq/parley/internal/channel/web"
)

// maxBody bounds a request's JSON.
const maxBody = 64 << 10

// Handle adds the rules' API (signed-in only: handle is the web channel's
// authenticated Handle). Each call takes ?machine=M: at a cluster's hub,
// node M's rules (machines.go); by default this machine's.
func (s *Set) Handle(handle func(pattern string, h http.Handler)) {
	handle("GET /api/rules", http.HandlerFunc(s.handleList))
	handle("POST /api/rules", http.HandlerFunc(s.handleAdd))
	handle("POST /api/rules/test", http.HandlerFunc(s.handleTest))
	handle("PUT /api/rules/{id}", http.HandlerFunc(s.handleUpdate))
	handle("DELETE /api/rules/{id}", http.HandlerFunc(s.handleRemove))
}

// machine is the machine a call names: its ?machine, else this one.
func (s *Set) machine(req *http.Request) string {
	if m := req.URL.Query().Get("machine"); m != "" {
		return m
	}
	return s.opt.Node
}

func (s *Set) handleList(w http.ResponseWriter, req *http.Request) {
	m := s.machine(req)
	list, err := s.ListAt(req.Context(), m)
	if err != nil {
		web.WriteRemoteError(w, err)
		return
	}
	out := map[string]any{"rules": list}
	if m != "" {
		out["machine"] = m
	}
	web.WriteJSON(w, http.StatusOK, out)
}

func (s *Set) handleAdd(w http.ResponseWriter, req *http.Request) {
	var sp Spec
	if err := web.DecodeJSON(w, req, maxBody, &sp); err != nil {
		web.WriteError(w, err)
		return
	}
	e, existed, err := s.addAt(req.Context(), s.machine(req), sp, web.CallerName(req.Context()))
	if err != nil {
		web.WriteRemoteError(w, err)
		return
	}
	if existed {
		// The same add sent again: answered as the first try's, not a change.
		web.WriteJSON(w, http.StatusOK, map[string]any{"rule": e, "existed": true})
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
	e, err := s.UpdateAt(req.Context(), s.machine(req), req.PathValue("id"), sp)
	if err != nil {
		web.WriteRemoteError(w, err)
		return
	}
	web.WriteJSON(w, http.StatusOK, map[string]any{"rule": e})
}

func (s *Set) handleRemove(w http.ResponseWriter, req *http.Request) {
	if err := s.RemoveAt(req.Context(), s.machine(req), req.PathValue("id")); err != nil {
		web.WriteRemoteError(w, err)
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
	a, err := s.TestAt(req.Context(), req.URL.Query().Get("machine"), p)
	if err != nil {
		web.WriteRemoteError(w, err)
		return
	}
	web.WriteJSON(w, http.StatusOK, a)
}
