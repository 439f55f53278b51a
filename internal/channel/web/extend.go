package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/parleyhq/parley/internal/chat"
)

// What other packages' endpoints (internal/schedule, ruleset, trigger)
// answer with, so every endpoint's errors have one shape and one mapping to
// HTTP statuses.

// WriteError answers err with its status and {"error": {"code","message"}}.
func WriteError(w http.ResponseWriter, err error) { writeErr(w, err) }

// WriteJSON answers v as JSON with the status.
func WriteJSON(w http.ResponseWriter, status int, v any) { writeJSON(w, status, v) }

// WriteRemoteError is WriteError for a change asked of a machine, this one or
// another: one that does not answer (chat.ErrAway) is a 503, the change not
// made, to try again once it is back; one that had it but whose answer did
// not come (chat.ErrUnanswered) a 503 "unanswered": it may have been made.
func WriteRemoteError(w http.ResponseWriter, err error) {
	if errors.Is(err, chat.ErrAway) && !errors.Is(err, chat.ErrUnanswered) {
		httpError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	writeErr(w, err)
}

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

// DecodeJSON reads one JSON object of at most limit bytes into v, for the
// endpoints other packages add (internal/schedule, ruleset, trigger);
// unknown fields are refused by name, so a misspelt option is not silently
// lost. Its errors are chat.ErrTooLarge or chat.ErrBadInput, for WriteError.
func DecodeJSON(w http.ResponseWriter, req *http.Request, limit int64, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, req.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return fmt.Errorf("%w: the request is larger than %d bytes", chat.ErrTooLarge, limit)
		}
		return chat.BadInput("the request is not the JSON expected: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return chat.BadInput("the request holds more than one JSON value")
	}
	return nil
}
