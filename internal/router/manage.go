// Threads a person manages: rename, archive, move to another agent, delete.

package router

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/fanout"
)

// edit renames the thread, (un)archives it or moves it to another agent;
// every surface showing the thread hears it (a thread_info event), and
// thread lists through the hub's watchers.
func (l *lane) edit(e ThreadEdit) error {
	// What the edit may change, put back when its commit fails: the lane
	// holds what the store holds (a move's closed cards stay open in both).
	was, wasAg, wasCarry, wasCards := l.mark(), l.ag, l.carryCheck, l.copyCards()
	var moved *chat.ThreadInfo
	if e.Agent != nil && *e.Agent != l.th.Agent {
		m, err := l.moveTo(*e.Agent, e.ContextMessages)
		if err != nil {
			return err
		}
		moved = &m
	}
	changed := moved != nil
	if e.Title != nil && *e.Title != l.th.Title {
		l.th.Title, changed = *e.Title, true
	}
	if e.Archived != nil && *e.Archived != l.th.Archived {
		l.th.Archived, changed = *e.Archived, true
	}
	if !changed {
		return nil
	}
	info := chat.ThreadInfo{Title: l.th.Title, Archived: l.th.Archived, Agent: l.th.Agent}
	if moved != nil {
		info.MovedFrom, info.ContextMessages = moved.MovedFrom, moved.ContextMessages
	}
	l.emit(info)
	// Stored before the answer: a list read after it shows the change.
	if err := l.flush(); err != nil {
		l.rollback(was)
		l.ag, l.carryCheck, l.cards = wasAg, wasCarry, wasCards
		return err
	}
	if moved != nil {
		l.log = l.r.log.With("thread", l.th.ID, "agent", l.th.Agent)
		l.log.Info("thread moved to another agent", "from", moved.MovedFrom, "context_messages", moved.ContextMessages)
	}
	return nil
}

// moveTo gives a thread whose agent is gone (no longer configured, or its
// transport not in this build) to another agent, in the same directory. The
// log stays; the new agent starts a fresh session at the next message,
// without the old agent's memory: contextMessages of the thread's last
// messages go with that message (moveContext) when the person asked for them.
// Nothing is changed unless every check passes.
func (l *lane) moveTo(agent string, contextMessages int) (chat.ThreadInfo, error) {
	if _, err := l.r.agent(l.th.Agent); err == nil {
		return chat.ThreadInfo{}, invalid("the thread's agent %q is still configured: a thread moves only when its agent is gone (start a new thread to use %q)", l.th.Agent, agent)
	}
	a, err := l.r.agent(agent)
	if err != nil {
		return chat.ThreadInfo{}, invalid("cannot move the thread to %q: %v", agent, err)
	}
	if _, err := config.Confine(l.th.Cwd, a.Roots); err != nil {
		return chat.ThreadInfo{}, err // the directory is outside the new agent's roots: says how to allow it
	}
	if l.turn != nil || len(l.queue) > 0 || l.life != noSession {
		return chat.ThreadInfo{}, invalid("the thread is busy (a turn runs, a message waits or its agent is starting): stop it first")
	}
	// Cards of the old agent can never be answered now: closed, saying so.
	l.cancelCards("", "")
	from := l.th.Agent
	l.th.Agent, l.th.SessionID, l.th.Mode, l.th.State = a.ID, "", a.Mode, chat.ThreadUnloaded
	l.th.Model = "" // the old agent's name for a model means nothing to the new one
	l.ag = a
	l.carryCheck = true
	return chat.ThreadInfo{MovedFrom: from, ContextMessages: contextMessages}, nil
}

// Bounds of what a moved thread carries to its new agent.
const (
	moveScan       = 2000     // events read back from the move
	moveMessageCap = 4 << 10  // bytes of one message
	moveContextCap = 32 << 10 // bytes in all
)

// moveContext is what goes before the next message a moved thread's new
// agent gets: the last messages before the move, when the person asked for
// them, or "". It is read from the log, so a restart between the move and
// the message keeps it. The context goes until a message reached the new
// agent (submitted, or maybe: unknown): messages the person sent since the
// move are in the log from when they were accepted, not from when they went,
// so they say nothing (one sent while the new agent starts is logged before
// the first is prompted), and a message that failed gave the agent nothing.
func (l *lane) moveContext() string {
	ctx, cancel := context.WithTimeout(l.r.ctx, 10*time.Second)
	defer cancel()
	evs, err := l.store.Tail(ctx, l.th.ID, moveScan)
	if err != nil {
		l.log.Warn("reading the thread's messages for the moved thread's context", "err", err)
		return ""
	}
	// The step's own events count too: a turn's receipt and its end may be
	// in the commit the next prompt goes with.
	evs = append(evs, l.batch.Events...)
	at := -1
	var info chat.ThreadInfo
	for i := len(evs) - 1; i >= 0 && at < 0; i-- {
		switch evs[i].Type {
		case chat.TypeDelivery:
			var d chat.Delivery
			if evs[i].Decode(&d) == nil && (d.State == chat.DeliverySubmitted || d.State == chat.DeliveryUnknown) {
				return "" // a message reached the new agent already, with the context
			}
		case chat.TypeThreadInfo:
			if evs[i].Decode(&info) == nil && info.MovedFrom != "" {
				at = i
			}
		}
	}
	if at < 0 || info.ContextMessages == 0 {
		return ""
	}
	msgs := lastMessages(evs[:at], info.MovedFrom, info.ContextMessages)
	if len(msgs) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[parley: this conversation was moved to you from the agent %q, which is no longer available. You do not have its memory of the conversation; here are the last %d messages, for context, each under the agent that wrote it.]\n\n", info.MovedFrom, len(msgs))
	for _, m := range msgs {
		b.WriteString(m)
		b.WriteString("\n\n")
	}
	b.WriteString("[parley: end of the earlier messages. The person's new message follows.]\n\n")
	return b.String()
}

// lastMessages are the last n messages of a log (the person's, and the
// agents' answers: its text up to a tool call, a message or the turn's end),
// each cut to moveMessageCap, oldest first, fewer when they pass
// moveContextCap together. agent wrote the answers after the log's last
// move; each earlier answer is named by the agent an earlier move (a
// thread moved twice) says it was moved from.
func lastMessages(evs []chat.Event, agent string, n int) []string {
	writers := make([]string, len(evs))
	for i := len(evs) - 1; i >= 0; i-- {
		writers[i] = agent
		var info chat.ThreadInfo
		if evs[i].Type == chat.TypeThreadInfo && evs[i].Decode(&info) == nil && info.MovedFrom != "" {
			agent = info.MovedFrom
		}
	}
	var msgs []string
	var answer strings.Builder
	writer := ""
	endAnswer := func() {
		if t := strings.TrimSpace(answer.String()); t != "" {
			msgs = append(msgs, writer+": "+clipText(t))
		}
		answer.Reset()
	}
	for i, ev := range evs {
		if writers[i] != writer {
			endAnswer()
			writer = writers[i]
		}
		switch ev.Type {
		case chat.TypeAgentChunk:
			var c chat.AgentChunk
			if ev.Decode(&c) == nil && answer.Len() <= moveMessageCap {
				answer.WriteString(c.Text)
			}
		case chat.TypeUserMessage:
			endAnswer()
			var u chat.UserMessage
			if ev.Decode(&u) == nil && strings.TrimSpace(u.Text) != "" {
				msgs = append(msgs, "Person: "+clipText(strings.TrimSpace(u.Text)))
			}
		case chat.TypeToolCall, chat.TypePromptDone:
			endAnswer()
		}
	}
	endAnswer()
	msgs = msgs[max(len(msgs)-n, 0):]
	total := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		if total += len(msgs[i]); total > moveContextCap {
			return msgs[i+1:]
		}
	}
	return msgs
}

func clipText(s string) string {
	if len(s) <= moveMessageCap {
		return s
	}
	cut := s[:moveMessageCap]
	for !utf8.ValidString(cut) {
		cut = cut[:len(cut)-1]
	}
	return cut + " […]"
}

// unarchive brings an archived thread back to the list: a person wrote to it.
func (l *lane) unarchive() {
	if l.th.Archived {
		l.th.Archived = false
		l.emit(chat.ThreadInfo{Title: l.th.Title})
	}
}

// DeletedNote is what a delete does to the agent's own record of the
// conversation, in the words every surface shows before it asks.
const DeletedNote = "The thread's messages, cards and search entries are deleted from parley. " +
	"The agent's own session (for Claude Code, its session file under ~/.claude/projects) is left on disk: " +
	"parley never deletes the agent's files. Files attached to its messages stay in the working folder's .parley-uploads. " +
	"A running turn is stopped first."

// DeleteThread deletes a thread: a turn in flight is stopped and the agent's
// process ended (its lane retires), then the store deletes what it holds of
// the thread, and every connection showing it is closed saying why. Routes
// that showed it show no thread. A thread on another machine is refused:
// its own machine deletes it.
func (r *Router) DeleteThread(ctx context.Context, id chat.ThreadID) error {
	return r.DeleteThreadWith(ctx, id, DeleteOptions{})
}

// DeleteThreadWith deletes a thread as DeleteThread does and, when asked,
// the worktree parley made for it (gitstart.go): one with uncommitted
// changes only with Force, else nothing is deleted.
func (r *Router) DeleteThreadWith(ctx context.Context, id chat.ThreadID, opt DeleteOptions) error {
	if err := validID("thread_id", string(id)); err != nil {
		return err
	}
	var l *lane
	var worktree string
	err := r.call(ctx, func() error {
		if rm := r.opt.Remote; rm != nil && rm.Owns(id) {
			return invalid("thread %s is on another machine: delete it there (parley threads --delete on that machine)", id)
		}
		if _, busy := r.deleting[id]; busy {
			return fmt.Errorf("thread %s: %w: it is being deleted", id, chat.ErrNotFound)
		}
		th, err := r.store.Thread(ctx, id)
		if err != nil {
			return fmt.Errorf("thread %s: %w", id, err)
		}
		if opt.RemoveWorktree {
			if worktree, err = worktreeToRemove(ctx, th, opt.Force); err != nil {
				return err
			}
		}
		// From here no message or control reaches the thread (lane refuses
		// it), and its lane, if any, is ours to end.
		r.deleting[id] = struct{}{}
		l = r.lanes[id]
		delete(r.lanes, id)
		return nil
	})
	if err != nil {
		return err
	}
	if l != nil {
		if err := l.retire(); err != nil {
			return err
		}
	}
	derr := r.store.DeleteThread(context.WithoutCancel(ctx), id)
	// The worktree goes before the thread's views are told it was deleted:
	// a screen that shows the thread gone finds its worktree gone too (or
	// the answer says why it stays).
	var werr error
	if derr == nil && worktree != "" {
		werr = removeWorktree(context.WithoutCancel(ctx), id, worktree, opt.Force)
	}
	err = r.call(context.WithoutCancel(ctx), func() error {
		delete(r.deleting, id)
		if derr != nil {
			return nil
		}
		for k, t := range r.routes {
			if t == id {
				delete(r.routes, k)
			}
		}
		r.fanout.CloseThread(id, fanout.ReasonDeleted)
		return nil
	})
	if derr != nil {
		return fmt.Errorf("router: delete thread %s: %w", id, derr)
	}
	if err == nil {
		r.log.Info("thread deleted", "thread", id)
	}
	if err == nil {
		err = werr
	}
	return err
}

// RemoteThreadGone ends what this machine holds of a thread another machine
// owns and deleted (a cluster's hub): the routes showing it (kept and in
// memory) and every view of it, which is told the thread was deleted.
func (r *Router) RemoteThreadGone(ctx context.Context, id chat.ThreadID) error {
	return r.call(ctx, func() error {
		for k, t := range r.routes {
			if t == id {
				delete(r.routes, k)
			}
		}
		r.fanout.CloseThread(id, fanout.ReasonDeleted)
		return r.store.DetachRemoteRoutes(ctx, id)
	})
}

// retire ends the lane for good (its thread is being deleted) and waits
// until its goroutine has returned.
func (l *lane) retire() error {
	select {
	case l.ctrl <- func() { l.retiring = true }:
	case <-l.gone:
		return nil
	case <-l.r.ctx.Done():
		return chat.ErrClosed
	}
	select {
	case <-l.gone:
		return nil
	case <-l.r.ctx.Done():
		return chat.ErrClosed
	}
}

// end is the retiring lane's last step: the turn is cut off and the session
// closed as at shutdown, its slot given back, and messages handed to the
// lane before it was let go of are refused.
func (l *lane) end() {
	l.shutdown("the thread was deleted; this turn was stopped", "the thread was deleted before the message reached the agent", true)
	l.r.slots.release(l)
	for {
		select {
		case a := <-l.inbox:
			a.done(chat.Delivery{}, fmt.Errorf("thread %s: %w: it was deleted", l.th.ID, chat.ErrNotFound))
		default:
			return
		}
	}
}
