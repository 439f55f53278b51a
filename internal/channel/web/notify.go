package web

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/mcpserver"
)

// maxNotifyBody bounds POST /api/notify: a notice is a few lines.
const maxNotifyBody = 16 << 10

// NotifyRequest is POST /api/notify's body (parley notify): a notice for
// a thread, named by its id or by its agent (that agent's thread changed
// last, archived ones left out).
type NotifyRequest struct {
	Thread chat.ThreadID `json:"thread,omitempty"`
	Agent  string        `json:"agent,omitempty"`
	Level  string        `json:"level,omitempty"` // info (default), done or error
	Text   string        `json:"text"`
}

// handleNotify stores a notice in a thread's log, as an agent's
// notify_person does, and answers once it is stored.
func (s *Server) handleNotify(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxNotifyBody+1))
	if err != nil {
		httpError(w, http.StatusBadRequest, "could not read the body: "+err.Error())
		return
	}
	if len(body) > maxNotifyBody {
		httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body is larger than %d bytes", maxNotifyBody))
		return
	}
	var req NotifyRequest
	if err := json.Unmarshal(body, &req); err != nil {
		httpError(w, http.StatusBadRequest, "body is not the JSON expected: "+err.Error())
		return
	}
	n, err := mcpserver.Notice(req.Text, req.Level, chat.FromCLI)
	if err != nil {
		writeErr(w, fmt.Errorf("%w: %v", chat.ErrBadInput, err))
		return
	}
	thread := req.Thread
	switch {
	case (thread == "") == (req.Agent == ""):
		writeErr(w, fmt.Errorf("%w: name the thread or the agent, one of the two", chat.ErrBadInput))
		return
	case thread == "":
		if thread, err = s.latestThread(r, req.Agent); err != nil {
			writeErr(w, err)
			return
		}
	}
	if err := s.router.Notify(r.Context(), thread, n); err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"thread": thread, "level": n.Level})
}

// latestThread is agent's thread changed last, leaving archived ones out.
func (s *Server) latestThread(r *http.Request, agent string) (chat.ThreadID, error) {
	ths, err := s.store.Threads(r.Context())
	if err != nil {
		return "", err
	}
	var best *chat.Thread
	for i, th := range ths {
		if th.Agent == agent && !th.Archived && th.Node == "" && (best == nil || th.UpdatedAt.After(best.UpdatedAt)) {
			best = &ths[i]
		}
	}
	if best == nil {
		return "", fmt.Errorf("%w: agent %q has no thread here (archived ones are left out)", chat.ErrNotFound, agent)
	}
	return best.ID, nil
}
