// Cards (permission requests and questions) and the controls that answer them.

package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/parleyhq/parley/internal/audit"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
)

// cancelCards cancels the open cards of a turn ("" for all).
func (l *lane) cancelCards(turnID string, _ string) {
	for id, c := range l.cards {
		if turnID != "" && c.TurnMessageID != "" && c.TurnMessageID != turnID {
			continue
		}
		l.closeCard(c, chat.CardCancelled, nil)
		delete(l.cards, id)
	}
}

// copyCards is a copy of the open cards (closing one changes it in place).
func (l *lane) copyCards() map[string]*chat.Card {
	m := make(map[string]*chat.Card, len(l.cards))
	for id, c := range l.cards {
		cp := *c
		m[id] = &cp
	}
	return m
}

// closeCard resolves or cancels a card and logs its *_resolved event.
func (l *lane) closeCard(c *chat.Card, state string, resolved chat.Payload) {
	if resolved == nil {
		if c.Kind == chat.CardQuestion {
			resolved = chat.QuestionResolved{RequestID: c.RequestID, Cancelled: true}
		} else {
			resolved = chat.PermissionResolved{RequestID: c.RequestID, Cancelled: true}
		}
	}
	b, _ := json.Marshal(resolved)
	c.State, c.Resolution, c.ResolvedAt = state, b, l.clock.Now()
	l.saveCard(c)
	l.emit(resolved)
	delete(l.cards, c.RequestID)
	l.askClosed(c.RequestID, resolved)
}

func (l *lane) openCard(kind, id string, p chat.Payload) {
	if id == "" || l.cards[id] != nil {
		l.log.Warn("card with empty or duplicate id ignored", "request_id", id)
		return
	}
	b, _ := json.Marshal(p)
	c := &chat.Card{ThreadID: l.th.ID, RequestID: id, Kind: kind, State: chat.CardOpen, Request: b, CreatedAt: l.clock.Now()}
	if l.turn != nil {
		c.TurnMessageID = l.turn.p.in.MessageID
	}
	l.cards[id] = c
	l.saveCard(c)
	l.emit(p)
}

// doControl runs a control; reply is called once with its verdict, at once or,
// for card answers, when the agent has taken the answer.
func (l *lane) doControl(c Control, reply func(error)) {
	switch {
	case c.Stop:
		reply(l.stop())
	case c.Withdraw != nil:
		reply(l.withdraw(c.From, c.Withdraw.MessageID))
	case c.Permission != nil:
		l.answerPermission(c, reply)
	case c.Answer != nil:
		l.answerQuestion(c, reply)
	case c.SetMode != nil:
		reply(l.setMode(c.SetMode.ModeID))
	case c.SetOption != nil:
		reply(l.setOption(c.SetOption.ConfigID, c.SetOption.Value))
	case c.Unload:
		reply(l.unload())
	case c.HandBack:
		l.handBack(func(err error) {
			if err == nil {
				l.recordHandBack(c)
			}
			reply(err)
		})
	case c.Edit != nil:
		reply(l.edit(*c.Edit))
	}
}

func (l *lane) card(id, kind string) (*chat.Card, error) {
	c := l.cards[id]
	if c == nil || c.Kind != kind {
		return nil, fmt.Errorf("%w: %s", chat.ErrCardClosed, id)
	}
	return c, nil
}

// answerCard resolves a card for every connection at once (so a second answer,
// from another tab, is refused as no longer open, and the resolution precedes
// the agent's reaction in the log), then tells the agent.
//
// The card's state is the lane's alone: a driver only translates the answer
// for its agent. The answer was checked against the card first; should the
// driver still refuse it (its agent takes less than the card shows), the card
// stays closed and the lane dismisses it to the agent, so the agent does not
// wait for an answer the thread says was given. The card's resolution is then
// corrected to cancelled, with the reason (an error event says it too), so the
// thread never keeps showing an answer the agent did not get.
func (l *lane) answerCard(c *chat.Card, state string, resolved chat.Payload, tell, dismiss func(context.Context, driver.Session) error, reply func(error)) {
	if l.sess == nil {
		// The card stays open (a message starts the agent again): not
		// card_closed, which clients take to mean it is over.
		reply(fmt.Errorf("%w; the card stays open", driver.ErrNotRunning))
		return
	}
	l.closeCard(c, state, resolved)
	id := c.RequestID
	l.tellSession(func(ctx context.Context, s driver.Session) error {
		err := tell(ctx, s)
		if err == nil {
			return nil
		}
		err = fmt.Errorf("the agent did not take the answer to %s: %w", id, err)
		if !errors.Is(err, driver.ErrUnknownCard) && dismiss != nil { // else the agent no longer waits for it
			if derr := dismiss(ctx, s); derr != nil {
				err = fmt.Errorf("%w; dismissing it failed too: %v", err, derr)
			} else {
				err = fmt.Errorf("%w; it was dismissed", err)
			}
		}
		reason := err.Error()
		l.result(func() { l.answerNotTaken(c, reason) })
		return err
	})
	reply(nil)
}

// answerNotTaken corrects a card closed with an answer the agent did not take:
// it ends cancelled, with the reason, in the store and in the log.
func (l *lane) answerNotTaken(c *chat.Card, reason string) {
	var p chat.Payload
	if c.Kind == chat.CardQuestion {
		p = chat.QuestionResolved{RequestID: c.RequestID, Cancelled: true, Reason: reason}
	} else {
		p = chat.PermissionResolved{RequestID: c.RequestID, Cancelled: true, Reason: reason}
	}
	b, _ := json.Marshal(p)
	c.State, c.Resolution, c.ResolvedAt = chat.CardCancelled, b, l.clock.Now()
	l.saveCard(c)
	l.emit(p)
}

func (l *lane) answerPermission(ctl Control, reply func(error)) {
	r := ctl.Permission
	c, err := l.card(r.RequestID, chat.CardPermission)
	if err != nil {
		reply(err)
		return
	}
	optionID := r.OptionID
	if r.Cancelled {
		optionID = "" // dismissed: no option reaches the agent or the log
	} else {
		var req chat.PermissionRequest
		_ = json.Unmarshal(c.Request, &req)
		if !slices.ContainsFunc(req.Options, func(o chat.PermissionOption) bool { return o.ID == optionID }) {
			reply(fmt.Errorf("%w: %q is not one of this card's options", chat.ErrBadInput, optionID))
			return
		}
	}
	by := ctl.From
	res := chat.PermissionResolved{RequestID: r.RequestID, OptionID: optionID, Message: r.Message, Cancelled: r.Cancelled, By: &by, Rule: r.rule}
	state := chat.CardResolved
	if r.Cancelled {
		state = chat.CardCancelled
	}
	ans := driver.PermissionAnswer{OptionID: optionID, Message: r.Message, Cancelled: r.Cancelled}
	var dismiss func(context.Context, driver.Session) error
	if !r.Cancelled {
		dismiss = func(ctx context.Context, s driver.Session) error {
			return s.AnswerPermission(ctx, r.RequestID, driver.PermissionAnswer{Cancelled: true})
		}
	}
	thread := l.th.ID
	l.answerCard(c, state, res, func(ctx context.Context, s driver.Session) error {
		err := s.AnswerPermission(ctx, r.RequestID, ans)
		if !errors.Is(err, driver.ErrNoWords) || ans.Message == "" {
			return err
		}
		// The agent takes the rejection without words (ACP's answer is an
		// option alone; Gemini CLI's "No" takes none): given so, and the
		// words go as the person's next message, queued behind the turn.
		plain := ans
		plain.Message = ""
		if err := s.AnswerPermission(ctx, r.RequestID, plain); err != nil {
			return err
		}
		// Sent by whoever answered: the audit trail names their device.
		l.wordsAsMessage(audit.WithActor(ctx, ctl.actor), thread, ctl.From, r.Message)
		return nil
	}, dismiss, func(err error) {
		if err == nil {
			l.recordAnswer(ctl, c, optionID, r.Cancelled)
		}
		reply(err)
	})
}

func (l *lane) answerQuestion(ctl Control, reply func(error)) {
	q := ctl.Answer
	c, err := l.card(q.RequestID, chat.CardQuestion)
	if err != nil {
		reply(err)
		return
	}
	var req chat.Question
	_ = json.Unmarshal(c.Request, &req)
	if err := checkAnswers(req, q); err != nil {
		reply(err)
		return
	}
	by := ctl.From
	res := chat.QuestionResolved{RequestID: q.RequestID, Answers: q.Answers, Response: q.Response, By: &by}
	reply = func(reply func(error)) func(error) {
		return func(err error) {
			if err == nil {
				l.recordAnswer(ctl, c, "", false)
			}
			reply(err)
		}
	}(reply)
	if _, ok := l.asks[q.RequestID]; ok {
		// The agent's ask_person waits for it (person.go), not the session.
		l.closeCard(c, chat.CardResolved, res)
		reply(nil)
		return
	}
	ans := driver.QuestionAnswer{Answers: q.Answers, Response: q.Response}
	l.answerCard(c, chat.CardResolved, res, func(ctx context.Context, s driver.Session) error {
		return s.AnswerQuestion(ctx, q.RequestID, ans)
	}, func(ctx context.Context, s driver.Session) error {
		return s.AnswerQuestion(ctx, q.RequestID, driver.QuestionAnswer{Cancelled: true})
	}, reply)
}

// checkAnswers checks a question card's answer against the card: each answer
// is to one of its questions, and the answer says something. What only an
// agent can judge (a form's number, a picker's one choice) is its driver's
// to refuse.
func checkAnswers(req chat.Question, q *QuestionAnswer) error {
	said := strings.TrimSpace(q.Response) != ""
	for text, a := range q.Answers {
		if !slices.ContainsFunc(req.Questions, func(it chat.QuestionItem) bool { return it.Question == text }) {
			return fmt.Errorf("%w: %q is not a question of this card", chat.ErrBadInput, text)
		}
		for _, w := range a.Words() {
			said = said || strings.TrimSpace(w) != ""
		}
	}
	if !said {
		return fmt.Errorf("%w: the answer is empty", chat.ErrBadInput)
	}
	return nil
}

func (l *lane) setMode(id string) error {
	if l.sess == nil {
		// No live session: remember it for the next start.
		l.th.Mode = id
		l.emit(chat.Mode{Current: id})
		return nil
	}
	l.tellInOrder(func(ctx context.Context, s driver.Session) error { return s.SetMode(ctx, id) })
	return nil
}

func (l *lane) setOption(id, value string) error {
	if l.sess == nil {
		return fmt.Errorf("%w: the agent is not running; send a message first", driver.ErrNotRunning)
	}
	l.tellInOrder(func(ctx context.Context, s driver.Session) error { return s.SetConfigOption(ctx, id, value) })
	return nil
}

// wordsAsMessage sends the words of a rejection the agent took without them
// as the person's next message to thread, from the route that answered. Off
// the lane (it waits for the lane to queue it); a refusal is said in the
// thread, with the words, so they are not lost unseen.
func (l *lane) wordsAsMessage(ctx context.Context, thread chat.ThreadID, from chat.RouteKey, words string) {
	_, _, err := l.r.Send(ctx, SendRequest{From: from, Thread: thread, Message: Message{MessageID: chat.NewID("w"), Text: words}})
	if err == nil {
		return
	}
	l.result(func() {
		l.emit(chat.Error{Code: chat.CodeAgent, Message: fmt.Sprintf("the agent took the rejection without your words, and sending them as a message failed (%v); send them again: %q", err, words)})
	})
}
