// A thread's session handed back to a terminal ("Continue in a terminal").

package router

import (
	"fmt"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
)

// handBack ends parley's agent process once the turn in flight and the
// messages queued behind it are done, then says on the thread the command
// that goes on with the session in a terminal (a handed_back session event;
// the thread's state handed_back). Answered once the thread says so, or at
// once when a turn must end first.
func (l *lane) handBack(reply func(error)) {
	drv, ag, err := l.driver()
	if err != nil {
		reply(err)
		return
	}
	hb, ok := drv.(driver.HandBacker)
	if !ok {
		reply(fmt.Errorf("%w: agent %q has no command to go on with its session in a terminal", driver.ErrUnsupported, ag.ID))
		return
	}
	if l.th.SessionID == "" {
		reply(fmt.Errorf("%w: the agent has not named its session yet: send it a message first", chat.ErrBadInput))
		return
	}
	spec := l.spec(ag)
	command := hb.ResumeCommand(spec)
	if command == "" {
		reply(fmt.Errorf("%w: agent %q has no command to go on with its session in a terminal", driver.ErrUnsupported, ag.ID))
		return
	}
	if l.handBackDue == nil {
		l.handBackDue = &handBackDue{}
	}
	l.handBackDue.command = command
	if l.turn != nil || len(l.queue) > 0 {
		l.log.Info("handing the session back after the turn")
		reply(nil)
		return
	}
	l.handBackDue.replies = append(l.handBackDue.replies, reply)
	l.maybeHandBack()
}

// handBackDue is a hand back asked for: the command it shows, and who waits
// for it to be shown.
type handBackDue struct {
	command string
	replies []func(error)
}

// maybeHandBack hands the session back when one is due and no turn runs or
// waits (finishTurn asks after every turn).
func (l *lane) maybeHandBack() {
	hb := l.handBackDue
	if hb == nil || l.turn != nil || len(l.queue) > 0 {
		return
	}
	l.handBackDue = nil
	if l.sess != nil {
		l.closeSession()
	}
	// An adopted pane is let go, never ended: from now on it is the
	// person's alone, and the next continue looks at it afresh.
	l.dropTerminal()
	// The terminal's process must not meet parley's: the thread says the
	// command once parley's has exited.
	closed := l.closed
	l.spawn(func() {
		if closed != nil {
			select {
			case <-closed:
			case <-l.r.ctx.Done():
			}
		}
		done := func() {
			l.th.State = chat.ThreadHandedBack
			l.emit(chat.SessionInfo{State: "handed_back", SessionID: l.th.SessionID, Command: hb.command})
			l.log.Info("session handed back", "session_id", l.th.SessionID)
			err := l.flush()
			for _, r := range hb.replies {
				r(err)
			}
		}
		if !l.result(done) {
			for _, r := range hb.replies {
				r(chat.ErrClosed)
			}
		}
	})
}
