// A thread's conversation over REST: its events, a message, stop, a card's answer.

package web

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/follow"
	"github.com/parleyhq/parley/internal/router"
)

func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	id := chat.ThreadID(r.PathValue("id"))
	th, err := s.store.Thread(r.Context(), id)
	if err != nil {
		writeErr(w, err)
		return
	}
	since, err1 := queryInt(r, "since", 0)
	limit, err2 := queryInt(r, "limit", 1000)
	if err := errors.Join(err1, err2); err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	if limit <= 0 || limit > 10000 {
		limit = 10000
	}
	evs, err := s.store.Events(r.Context(), id, int64(since), limit)
	if err != nil {
		writeErr(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	buf := make([]byte, 0, 4096)
	buf = append(buf, `{"events":[`...)
	for i, ev := range evs {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, ev.Frame()...)
	}
	buf = append(buf, ']')
	if through := follow.PrunedThrough(int64(since), th.LastSeq, evs); through > 0 {
		buf = append(buf, `,"pruned_through":`...)
		buf = strconv.AppendInt(buf, through, 10)
	}
	buf = append(buf, "}\n"...)
	w.Write(buf)
}

// restRoute is the route REST calls come from.
var restRoute = chat.RouteKey{Channel: "rest", Chat: "api"}

func (s *Server) handleSend(w http.ResponseWriter, r *http.Request) {
	var m router.Message
	if !s.readBody(w, r, &m) {
		return
	}
	s.sendAndWait(w, r, chat.ThreadID(r.PathValue("id")), m)
}

// sendAndWait sends m to thread through the one send path and answers with
// the furthest receipt reached within ?wait= (a message, a line's comment, a
// request to commit).
func (s *Server) sendAndWait(w http.ResponseWriter, r *http.Request, thread chat.ThreadID, m router.Message) {
	final := make(chan chat.Delivery, 8)
	notify := func(d chat.Delivery) {
		if d.State == chat.DeliverySubmitted || d.State == chat.DeliveryFailed || d.State == chat.DeliveryUnknown {
			select {
			case final <- d:
			default:
			}
		}
	}
	d, thread, err := s.router.Send(r.Context(), router.SendRequest{
		From: restRoute, Thread: thread, Message: m, Notify: notify,
	})
	if errors.Is(err, chat.ErrAway) {
		err = nil // queued for a machine that is away: its receipt says so
	}
	if errors.Is(err, chat.ErrDuplicate) {
		writeJSON(w, http.StatusOK, map[string]any{"message_id": d.MessageID, "state": d.State, "detail": d.Detail, "thread": thread, "duplicate": true})
		return
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	// Answer with the furthest receipt reached within the wait (default 10 s).
	wait := 10 * time.Second
	if v := r.URL.Query().Get("wait"); v != "" {
		if dur, err := time.ParseDuration(v); err == nil && dur >= 0 && dur <= time.Minute {
			wait = dur
		}
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case d = <-final:
	case <-t.C:
	case <-r.Context().Done():
	}
	writeJSON(w, http.StatusOK, map[string]any{"message_id": d.MessageID, "state": d.State, "detail": d.Detail, "thread": thread})
}

func (s *Server) handleStop(w http.ResponseWriter, r *http.Request) {
	err := s.router.Control(r.Context(), router.Control{From: restRoute, Thread: chat.ThreadID(r.PathValue("id")), Stop: true})
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"stopped": true})
}

func (s *Server) handleCard(w http.ResponseWriter, r *http.Request) {
	// One body for both kinds of card: answers (or a response) answer a question.
	var body struct {
		OptionID  string       `json:"option_id"`
		Message   string       `json:"message"`
		Cancelled bool         `json:"cancelled"`
		Answers   chat.Answers `json:"answers"`
		Response  string       `json:"response"`
	}
	if !s.readBody(w, r, &body) {
		return
	}
	c := router.Control{From: restRoute, Thread: chat.ThreadID(r.PathValue("id"))}
	rid := r.PathValue("request_id")
	if body.Answers != nil || body.Response != "" {
		c.Answer = &router.QuestionAnswer{RequestID: rid, Answers: body.Answers, Response: body.Response}
	} else {
		c.Permission = &router.PermissionAnswer{RequestID: rid, OptionID: body.OptionID, Message: body.Message, Cancelled: body.Cancelled}
	}
	if err := s.router.Control(r.Context(), c); err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"resolved": true})
}
