// What the agent reports through its driver.Sink, taken on the lane goroutine.

package router

import (
	"encoding/json"
	"errors"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/watch"
	"github.com/parleyhq/parley/internal/marks"
)

type updateKind int

const (
	upEvent updateKind = iota
	upReceived
	upSessionID
	upTurnEnded
	upWithdrawn
	upExited
	upWaiting
)

type update struct {
	gen  int
	kind updateKind
	p    chat.Payload
	s    string
	msg  string // upWaiting: the message it is about
	err  error
}

func (l *lane) onUpdate(u update) {
	if u.gen != l.gen {
		return // a session that is gone
	}
	switch u.kind {
	case upEvent:
		if marks.On() {
			marks.End("lane update", u.p.EventType(), marks.Start())
		}
		l.onEvent(u.p)
	case upReceived:
		l.received()
	case upSessionID:
		if u.s != "" && u.s != l.th.SessionID {
			l.th.SessionID = u.s
			l.readTo(0) // a place in the old session's transcript is none in the new one's
			l.emit(chat.SessionInfo{State: "identified", SessionID: u.s})
		}
	case upTurnEnded:
		if l.turn != nil {
			l.endTurn(l.turn, u.s)
		}
	case upWaiting:
		// The driver's word that the turn's text waits (tmux: a turn, a
		// menu); the receipt is the lane's. The stored state stays
		// "delivering": the text may be typed any moment, and a crash then
		// must not send it again. Only while Prompt runs: a report taken
		// after Prompt's return (another channel) is of a wait that is over.
		if t := l.turn; t != nil && t.phase == prompting && t.p.in.MessageID == u.msg {
			d := chat.Delivery{MessageID: u.msg, State: chat.DeliveryQueued, Detail: u.s}
			l.emit(d)
			if t.p.notify != nil {
				t.p.notify(d)
			}
		}
	case upWithdrawn:
		if c := l.cards[u.s]; c != nil {
			if elsewhere(c) || l.inPane() {
				// Gone from the terminal it was asked in, or from an adopted
				// pane without parley's answer (a key pressed there): answered there.
				l.closeCard(c, chat.CardResolved, answeredThere(c))
				break
			}
			l.closeCard(c, chat.CardCancelled, nil)
		}
	case upExited:
		l.closeSession() // what the driver still holds for it (a follower, a listener)
		l.dropTerminal() // the person's process is gone: the thread can continue the session itself
		detail := "the agent exited"
		if u.err != nil {
			detail = "the agent exited: " + u.err.Error()
			l.th.State = chat.ThreadCrashed
		} else {
			l.th.State = chat.ThreadUnloaded
		}
		l.emit(chat.SessionInfo{State: "exited", SessionID: l.th.SessionID, Detail: detail})
		l.cancelCards("", "")
		if t := l.turn; t != nil {
			// The driver's word that the agent may have taken the text
			// before it died (stream: Claude Code began the turn, and its
			// transcript did not keep it): "unknown", never "failed".
			t.exitUnverified = errors.Is(u.err, driver.ErrUnverified)
			switch {
			case !t.sent():
				// Whether the text got there is Prompt's to say; it returns
				// promptly now that the process is gone.
				t.exitDetail, t.endReason = detail, chat.StopError
			case t.phase != delivered:
				l.notTaken(t, chat.StopError, detail)
			default:
				l.emit(chat.Error{Code: chat.CodeAgent, Message: detail, Ref: t.p.in.MessageID})
				l.finishTurn(t, chat.StopError)
			}
		}
	}
}

func (l *lane) onEvent(p chat.Payload) {
	switch p := p.(type) {
	case chat.PermissionRequest:
		if len(p.Diffs) == 0 {
			p.Diffs = writeDiffs(p.Tool, l.ag.Roots)
		}
		l.openCard(chat.CardPermission, p.RequestID, p)
		if p.Elsewhere == "" { // a card answered elsewhere is no rule's to answer
			l.applyRules(p)
		}
		return
	case chat.UserMessage:
		// A prompt the person typed where the session runs (a watched
		// terminal): shown as theirs, with its receipt, so no client shows
		// it waiting.
		if l.th.Title == "" {
			l.th.Title = titleOf(p.Text)
		}
		l.emit(p)
		l.emit(chat.Delivery{MessageID: p.MessageID, State: chat.DeliverySubmitted})
		return
	case chat.Question:
		l.openCard(chat.CardQuestion, p.RequestID, p)
		return
	case chat.Mode:
		l.th.Mode = p.Current
		if m := p.Model(); m != "" {
			l.th.Model = m
		}
	case chat.AgentDraft:
		// Provisional text lives only while its turn runs, and only on the
		// wire (flush publishes the newest of a step): never in the log.
		if l.turn != nil {
			l.draft = &p
		}
		return
	case watch.ReadTo:
		l.readTo(p.Offset) // the driver's place, not for the person
		return
	case chat.Delivery:
		// Receipts are the lane's alone (Sink.Waiting is how a driver says
		// a text waits): one a driver sends is not shown.
		l.log.Warn("a driver reported a delivery state; ignored", "message", p.MessageID, "state", p.State)
		return
	}
	l.emit(p)
}

// elsewhere reports a card answered where the session runs, not here.
func elsewhere(c *chat.Card) bool {
	var p chat.PermissionRequest
	return c.Kind == chat.CardPermission && json.Unmarshal(c.Request, &p) == nil && p.Elsewhere != ""
}

// laneSink is the driver.Sink of one session generation.
type laneSink struct {
	l   *lane
	gen int
}

func (s *laneSink) send(u update) {
	u.gen = s.gen
	select {
	case s.l.updates <- u:
	case <-s.l.r.ctx.Done():
	case <-s.l.gone:
	}
}

func (s *laneSink) Event(p chat.Payload) { s.send(update{kind: upEvent, p: p}) }

func (s *laneSink) Received() { s.send(update{kind: upReceived}) }

func (s *laneSink) SessionID(id string) { s.send(update{kind: upSessionID, s: id}) }

func (s *laneSink) TurnEnded(reason string) { s.send(update{kind: upTurnEnded, s: reason}) }

func (s *laneSink) CardWithdrawn(id string) { s.send(update{kind: upWithdrawn, s: id}) }

func (s *laneSink) Waiting(messageID, reason string) {
	s.send(update{kind: upWaiting, msg: messageID, s: reason})
}
func (s *laneSink) Exited(err error) { s.send(update{kind: upExited, err: err}) }
