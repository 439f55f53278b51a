// What an agent's own tools (parley's MCP server, internal/mcpserver) and
// parley notify ask of a thread: a question card the agent waits on, and a
// notice in the log.

package router

import (
	"context"
	"fmt"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
)

// Tools grants each agent session parley's MCP server (internal/mcpserver).
type Tools interface {
	// Grant makes a credential that reaches thread alone; revoke drops it.
	Grant(thread chat.ThreadID) (srv *driver.MCPServer, revoke func())
}

// Ask opens a question card in thread, as a driver's question is opened
// (the same card state: shown on every surface, pushed, answered once), and
// waits for its answer: the words picked or written. The card closing
// unanswered (a stop, the turn's or the session's end) is an error saying
// so; ctx ending (the agent gave up its call) withdraws the card.
func (r *Router) Ask(ctx context.Context, thread chat.ThreadID, q chat.QuestionItem) ([]string, error) {
	l, err := r.localLane(ctx, thread)
	if err != nil {
		return nil, err
	}
	id := chat.NewID("ask")
	done := make(chan chat.QuestionResolved, 1)
	err = l.onLane(ctx, func(reply func(error)) {
		if l.sess == nil {
			reply(fmt.Errorf("%w: the thread's session has ended", driver.ErrNotRunning))
			return
		}
		l.asks[id] = done
		l.openCard(chat.CardQuestion, id, chat.Question{RequestID: id, Questions: []chat.QuestionItem{q}})
		reply(nil)
	})
	if err != nil {
		return nil, err
	}
	select {
	case res := <-done:
		if res.Cancelled {
			why := "the question was closed unanswered (stopped, or the turn or session ended)"
			if res.Reason != "" {
				why = "the question was closed unanswered: " + res.Reason
			}
			return nil, fmt.Errorf("%s", why)
		}
		var words []string
		if a, ok := res.Answers[q.Question]; ok {
			words = a.Words()
		}
		if res.Response != "" {
			words = append(words, res.Response)
		}
		return words, nil
	case <-l.gone:
		return nil, chat.ErrClosed
	case <-r.ctx.Done():
		return nil, chat.ErrClosed
	case <-ctx.Done():
	}
	// The agent gave up the call: the card goes too, so nobody answers a
	// question no one waits for. (A lane that goes meanwhile ends the wait.)
	_ = l.onLane(context.WithoutCancel(ctx), func(reply func(error)) {
		if c := l.cards[id]; c != nil {
			l.closeCard(c, chat.CardCancelled, chat.QuestionResolved{RequestID: id, Cancelled: true, Reason: "the agent stopped waiting for the answer"})
		}
		reply(nil)
	})
	return nil, ctx.Err()
}

// askClosed hands a closed card's resolution to the ask_person call
// waiting for it, if any.
func (l *lane) askClosed(id string, resolved chat.Payload) {
	done, ok := l.asks[id]
	if !ok {
		return
	}
	delete(l.asks, id)
	res, _ := resolved.(chat.QuestionResolved)
	done <- res // buffered, and closed once: never blocks
}

// Notify stores a notice in thread's log (shown on every surface, pushed to
// the devices that turned notices on) and returns once it is stored.
func (r *Router) Notify(ctx context.Context, thread chat.ThreadID, n chat.Notice) error {
	l, err := r.localLane(ctx, thread)
	if err != nil {
		return err
	}
	return l.onLane(ctx, func(reply func(error)) {
		was := l.mark()
		l.emit(n)
		if err := l.flush(); err != nil {
			l.rollback(was)
			reply(err)
			return
		}
		reply(nil)
	})
}

// localLane is the lane of a thread of this machine.
func (r *Router) localLane(ctx context.Context, id chat.ThreadID) (*lane, error) {
	if err := validID("thread", string(id)); err != nil {
		return nil, err
	}
	var l *lane
	err := r.call(ctx, func() error {
		if rm := r.opt.Remote; rm != nil && rm.Owns(id) {
			return invalid("thread %s is on another machine: run this there", id)
		}
		var err error
		l, err = r.lane(ctx, id)
		return err
	})
	return l, err
}
