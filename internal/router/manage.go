// Threads a person manages: rename, archive, delete.

package router

import (
	"context"
	"fmt"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/hub"
)

// edit renames the thread or (un)archives it; every surface showing the
// thread hears it (a thread_info event), and thread lists through the hub's
// watchers.
func (l *lane) edit(e ThreadEdit) error {
	was := l.th
	changed := false
	if e.Title != nil && *e.Title != l.th.Title {
		l.th.Title, changed = *e.Title, true
	}
	if e.Archived != nil && *e.Archived != l.th.Archived {
		l.th.Archived, changed = *e.Archived, true
	}
	if !changed {
		return nil
	}
	l.emit(chat.ThreadInfo{Title: l.th.Title, Archived: l.th.Archived})
	// Stored before the answer: a list read after it shows the change.
	if err := l.flush(); err != nil {
		l.th.Title, l.th.Archived = was.Title, was.Archived
		return err
	}
	return nil
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
	if err := validID("thread_id", string(id)); err != nil {
		return err
	}
	var l *lane
	err := r.call(ctx, func() error {
		if rm := r.opt.Remote; rm != nil && rm.Owns(id) {
			return invalid("thread %s is on another machine: delete it there (parley threads --delete on that machine)", id)
		}
		if _, busy := r.deleting[id]; busy {
			return fmt.Errorf("thread %s: %w: it is being deleted", id, chat.ErrNotFound)
		}
		if _, err := r.store.Thread(ctx, id); err != nil {
			return fmt.Errorf("thread %s: %w", id, err)
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
		r.hub.CloseThread(id, hub.ReasonDeleted)
		return nil
	})
	if derr != nil {
		return fmt.Errorf("router: delete thread %s: %w", id, derr)
	}
	if err == nil {
		r.log.Info("thread deleted", "thread", id)
	}
	return err
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
	l.shutdown("the thread was deleted; this turn was stopped", "the thread was deleted before the message reached the agent")
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
