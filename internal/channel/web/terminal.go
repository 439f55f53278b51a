// A claude-tmux thread's terminal, live: its screen streamed, keys typed into it.

package web

import (
	"context"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
)

const (
	// terminalEvery is the least time between two reads of a pane, so a
	// stream reads it at most five times a second however busy it is; a
	// screen is sent only when it changed.
	terminalEvery = 200 * time.Millisecond
	// maxTerminals bounds the open terminal streams (each reads its pane).
	maxTerminals = 32
	// maxTyped bounds what one POST types.
	maxTyped = 4096
)

// terminalOf finds the terminal of the thread the request names (a node's
// thread's is read and typed into on its node), or says (written to w) why
// there is none.
func (s *Server) terminalOf(w http.ResponseWriter, r *http.Request) (driver.Terminal, bool) {
	th, err := s.store.Thread(r.Context(), chat.ThreadID(r.PathValue("id")))
	if err != nil {
		writeErr(w, err)
		return nil, false
	}
	hub, node, own, remote, err := s.onNode(th)
	var term driver.Terminal
	switch {
	case err != nil:
	case remote:
		term = hub.NodeTerminal(node, own)
	default:
		term, err = s.work().Terminal(r.Context(), th.ID)
	}
	if err != nil {
		writeErr(w, err)
		return nil, false
	}
	return term, true
}

// handleTerminal streams the thread's pane as server-sent events:
// `event: screen` with the screen (driver.Screen as JSON) whenever it
// changed, read at most every terminalEvery; `event: gone` with
// {"message"} when the pane ends, and the stream with it.
func (s *Server) handleTerminal(w http.ResponseWriter, r *http.Request) {
	if s.terminals.Add(1) > maxTerminals {
		s.terminals.Add(-1)
		httpError(w, http.StatusServiceUnavailable, fmt.Sprintf("too many terminal views open (at most %d)", maxTerminals))
		return
	}
	defer s.terminals.Add(-1)
	term, ok := s.terminalOf(w, r)
	if !ok {
		return
	}
	first, err := term.Screen(r.Context())
	if err != nil {
		writeErr(w, err)
		return
	}
	events := startEvents(w)
	defer events.stop()
	last := first
	if !events.send("screen", last) {
		return
	}
	tick := time.NewTicker(terminalEvery)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			sc, err := term.Screen(r.Context())
			if err != nil {
				if r.Context().Err() == nil {
					events.send("gone", map[string]string{"message": err.Error()})
				}
				return
			}
			if sc != last {
				last = sc
				if !events.send("screen", sc) {
					return
				}
			}
		case <-events.keepAlives():
			if !events.keepAlive() {
				return
			}
		case <-r.Context().Done():
			return
		case <-s.ctx.Done():
			return
		}
	}
}

// typed is the body of POST /api/threads/{id}/terminal/keys.
type typed struct {
	Text string `json:"text"`
}

// handleTerminalKeys types text into the thread's pane, literally. It goes
// around the lane: no message, no receipt, nothing in the thread's log.
func (s *Server) handleTerminalKeys(w http.ResponseWriter, r *http.Request) {
	var in typed
	if !s.readBody(w, r, &in) {
		return
	}
	switch {
	case in.Text == "":
		httpError(w, http.StatusBadRequest, "text is empty: nothing to type")
		return
	case len(in.Text) > maxTyped:
		httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("text is longer than %d bytes", maxTyped))
		return
	case !utf8.ValidString(in.Text):
		httpError(w, http.StatusBadRequest, "text is not UTF-8")
		return
	}
	term, ok := s.terminalOf(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	if err := term.Type(ctx, in.Text); err != nil {
		writeErr(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
