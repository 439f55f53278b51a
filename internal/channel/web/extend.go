package web

import (
	"context"
	"net/http"
)

// What other packages' endpoints (internal/schedule, internal/trigger)
// answer with, so every endpoint's errors have one shape and one mapping to
// HTTP statuses.

// WriteError answers err with its status and {"error": {"code","message"}}.
func WriteError(w http.ResponseWriter, err error) { writeErr(w, err) }

// WriteJSON answers v as JSON with the status.
func WriteJSON(w http.ResponseWriter, status int, v any) { writeJSON(w, status, v) }

// HTTPError answers a status with a message of its own.
func HTTPError(w http.ResponseWriter, status int, msg string) { httpError(w, status, msg) }

// HandleOpen adds an endpoint that neither token nor cookie reaches: one that
// authenticates each request itself (a trigger's webhook, by its signature),
// and that must hold nothing for a stranger (a bounded body, a deadline).
func (s *Server) HandleOpen(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// CallerName names who made a request: the device's name, or "token" for
// the shared token (the CLI and scripts).
func CallerName(ctx context.Context) string {
	if d, ok := callerDevice(ctx); ok {
		return d.Name
	}
	return "token"
}
