// Reading JSON bodies; writing answers and errors with their codes.

package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/parleyhq/parley/internal/auth"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/gitwork"
	"github.com/parleyhq/parley/internal/wire"
)

// readBody decodes a JSON body of at most the frame limit (the router judges a
// message's own size).
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, v any) bool {
	limit := config.FrameLimit(s.opt.Limits.MaxMessageBytes)
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		httpError(w, http.StatusBadRequest, "could not read the body: "+err.Error())
		return false
	}
	if int64(len(body)) > limit {
		httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body is larger than %d bytes", limit))
		return false
	}
	if err := json.Unmarshal(body, v); err != nil {
		httpError(w, http.StatusBadRequest, "body is not the JSON expected: "+err.Error())
		return false
	}
	return true
}

func queryInt(r *http.Request, name string, def int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s must be a non-negative integer", name)
	}
	return n, nil
}

// A node's thread's work when its machine is not there, or did not answer
// in time (what was asked may still happen there).
const (
	codeOffline  = "machine_offline"
	codeNodeSlow = "machine_timeout"
)

// errorCode maps an error to its socket code and HTTP status, in one place.
func errorCode(err error) (string, int) {
	var we *wire.Error
	var ge *gitwork.Error
	switch {
	case errors.As(err, &we):
		return we.Code, http.StatusBadRequest
	case errors.As(err, &ge):
		return gitStatus(ge)
	case errors.Is(err, chat.ErrNotFound):
		return chat.CodeNotFound, http.StatusNotFound
	case errors.Is(err, chat.ErrBusy):
		return chat.CodeBusy, http.StatusTooManyRequests
	case errors.Is(err, chat.ErrTooLarge):
		return chat.CodeTooLarge, http.StatusRequestEntityTooLarge
	case errors.Is(err, auth.ErrTooManyCodes):
		return chat.CodeRateLimit, http.StatusTooManyRequests
	case errors.Is(err, chat.ErrRateLimited):
		return chat.CodeRateLimit, http.StatusTooManyRequests
	case errors.Is(err, chat.ErrSessionLimit):
		return chat.CodeBusy, http.StatusServiceUnavailable
	case errors.Is(err, chat.ErrCardClosed):
		return chat.CodeCardClosed, http.StatusConflict
	case errors.Is(err, chat.ErrSessionRunning):
		return chat.CodeSessionRunning, http.StatusConflict
	case errors.Is(err, chat.ErrNoTurn):
		return chat.CodeBadInput, http.StatusConflict
	case errors.Is(err, chat.ErrBadInput), errors.Is(err, chat.ErrUnknownAgent):
		return chat.CodeBadInput, http.StatusBadRequest
	case errors.Is(err, chat.ErrOutsideRoot):
		return chat.CodeForbidden, http.StatusForbidden
	case errors.Is(err, driver.ErrNotRunning), errors.Is(err, driver.ErrUnsupported):
		return chat.CodeAgent, http.StatusConflict
	case errors.Is(err, chat.ErrClosed):
		return chat.CodeInternal, http.StatusServiceUnavailable
	case errors.Is(err, chat.ErrIDTaken):
		return chat.CodeIDTaken, http.StatusConflict
	case errors.Is(err, chat.ErrUnanswered): // before ErrAway, which it also is
		return chat.CodeUnanswered, http.StatusServiceUnavailable
	case errors.Is(err, cluster.ErrNodeOffline), errors.Is(err, chat.ErrAway):
		return codeOffline, http.StatusServiceUnavailable
	case errors.Is(err, cluster.ErrNodeSlow):
		return codeNodeSlow, http.StatusGatewayTimeout
	}
	return chat.CodeInternal, http.StatusInternalServerError
}

func writeErr(w http.ResponseWriter, err error) {
	code, status := errorCode(err)
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": err.Error()}})
}

func httpError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": http.StatusText(status), "message": msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// gitStatus is a git action's refusal as an answer: what the person asked
// wrongly is a 400, what git would not do a 409.
func gitStatus(e *gitwork.Error) (string, int) {
	switch e.Code {
	case "bad_input", "bad_path":
		return chat.CodeBadInput, http.StatusBadRequest
	}
	return e.Code, http.StatusConflict
}
