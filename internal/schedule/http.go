package schedule

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/parleyhq/parley/internal/chat"
	"io"
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
		WriteError(w, err)
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
	if err := DecodeJSON(w, req, maxBody, &sp); err != nil {
		web.WriteError(w, err)
		return
	}
	s, err := r.addAt(req.Context(), sp)
	if err != nil {
		WriteError(w, err)
		return
	}
	r.record(req.Context(), "added", s)
	web.WriteJSON(w, http.StatusOK, map[string]any{"schedule": s})
}

func (r *Runner) handlePause(paused bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		s, err := r.pauseAt(req.Context(), req.PathValue("id"), paused)
		if err != nil {
			WriteError(w, err)
			return
		}
		r.record(req.Context(), map[bool]string{true: "paused", false: "resumed"}[paused], s)
		web.WriteJSON(w, http.StatusOK, map[string]any{"schedule": s})
	})
}

func (r *Runner) handleRemove(w http.ResponseWriter, req *http.Request) {
	if err := r.removeAt(req.Context(), req.PathValue("id")); err != nil {
		WriteError(w, err)
		return
	}
	machine, _, _ := r.elsewhere(req.PathValue("id"))
	r.record(req.Context(), "removed", Schedule{ID: req.PathValue("id"), Node: machine})
	web.WriteJSON(w, http.StatusOK, map[string]any{})
}

// DecodeJSON reads one JSON object of at most limit bytes into v; unknown
// fields are refused by name, so a misspelt option is not silently lost.
func DecodeJSON(w http.ResponseWriter, req *http.Request, limit int64, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, req.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return fmt.Errorf("%w: the request is larger than %d bytes", chat.ErrTooLarge, limit)
		}
		return badInput(fmt.Sprintf("the request is not the JSON expected: %v", err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badInput("the request holds more than one JSON value")
	}
	return nil
}

// WriteError is web.WriteError, with a machine that does not answer as 503
// (the change was not made: try again once it is back).
func WriteError(w http.ResponseWriter, err error) {
	if errors.Is(err, chat.ErrAway) {
		web.HTTPError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	web.WriteError(w, err)
}
