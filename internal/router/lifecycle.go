// The lane's session: its phases and the moves between them (start, idle
// unload, close); recovery after a crash and shutdown.

package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/procgroup"
)

// The lane's session is in one phase at a time; the lane changes it only
// through moveSession, along these transitions:
//
//	noSession ──startSession────────────────────────────▶ sessionStarting
//	sessionStarting ──started: a session────────────────▶ sessionLive
//	sessionStarting ──started: an error, or stale───────▶ noSession
//	sessionLive ──closeSession (idle, exit, stop grace)─▶ noSession
//	any phase ──shutdown────────────────────────────────▶ laneClosing (final)
//
// In laneClosing no turn starts and no session is kept: a start that returns
// then is closed at once. The live session itself is l.sess (data, not
// state): set exactly while the phase is sessionLive, and until shutdown has
// closed it.
type sessionPhase int

const (
	noSession       sessionPhase = iota // never started, unloaded, exited or failed
	sessionStarting                     // Start runs off the lane; messages wait, queued
	sessionLive                         // l.sess serves the thread
	laneClosing                         // the router is closing
)

var sessionPhases = [...]string{"no session", "starting", "live", "closing"}

func (p sessionPhase) String() string { return sessionPhases[p] }

// sessionMoves lists each phase's next phases (laneClosing is always allowed).
var sessionMoves = map[sessionPhase][]sessionPhase{
	noSession:       {sessionStarting},
	sessionStarting: {sessionLive, noSession},
	sessionLive:     {noSession},
}

// moveSession changes the session's phase. A move the table does not allow
// is a bug in the lane; it is logged, and made.
func (l *lane) moveSession(to sessionPhase) {
	if to != laneClosing && !slices.Contains(sessionMoves[l.life], to) {
		l.log.Error("session: a move the phases do not allow", "from", l.life, "to", to)
	}
	l.life = to
}

// setSession makes s the live session (nil: none), keeping the live-sessions
// gauge and the phase.
func (l *lane) setSession(s driver.Session) {
	switch {
	case l.sess == nil && s != nil:
		l.r.opt.Metrics.LiveSessions.Inc()
	case l.sess != nil && s == nil:
		l.r.opt.Metrics.LiveSessions.Dec()
		if l.revokeTools != nil { // the session ends: its credential with it
			l.revokeTools()
			l.revokeTools = nil
		}
	}
	l.sess = s
	if l.life == laneClosing {
		return
	}
	if s != nil {
		l.moveSession(sessionLive)
	} else if l.life == sessionLive {
		l.moveSession(noSession)
	}
}

func (l *lane) startSession() {
	if l.life != noSession {
		return // starting or live already, or closing
	}
	drv, ag, err := l.driver()
	if err != nil {
		l.sessionFailed(err)
		return
	}
	l.ag = ag
	l.moveSession(sessionStarting)
	l.gen++
	gen := l.gen
	// Some agents take tens of seconds to start (OpenCode): the thread says
	// so at once, and its time says since when.
	l.emit(chat.SessionInfo{State: "starting", SessionID: l.th.SessionID})
	spec := l.spec(ag)
	revoke := func() {}
	if t := l.r.opt.Tools; t != nil {
		spec.Tools, revoke = t.Grant(l.th.ID)
	}
	sink := &laneSink{l: l, gen: gen}
	live := chat.LiveSession{Thread: l.th.ID, Agent: ag.ID, Cwd: l.th.Cwd}
	resumed := l.th.SessionID != ""
	// A terminal's process is the one the thread means to follow.
	checkRunning := resumed && l.term == nil
	closed := l.closed
	l.spawn(func() {
		if closed != nil {
			select {
			case <-closed:
			case <-l.r.ctx.Done():
			}
		}
		var s driver.Session
		var err error
		if checkRunning {
			// A session handed back, or run in a terminal since: a second
			// process on it would fork it.
			err = l.r.notRunningElsewhere(l.r.ctx, drv, spec)
		}
		if err == nil {
			err = l.r.slots.acquire(l.r.ctx, l, live)
		}
		if err == nil {
			s, err = drv.Start(l.r.ctx, spec, sink)
		}
		if !l.result(func() { l.started(gen, s, err, resumed, revoke) }) {
			revoke()
			// The lane is gone (shut down, or its thread deleted) while
			// this started: nobody will use the session.
			if s != nil {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_ = s.Close(ctx)
				cancel()
			}
			l.r.slots.release(l)
		}
	})
}

// started takes a start's result; revoke drops the credential the start
// was given, kept with the session when it is taken, dropped otherwise.
func (l *lane) started(gen int, s driver.Session, err error, resumed bool, revoke func()) {
	kept := false
	defer func() {
		if !kept {
			revoke()
		}
	}()
	if s == nil {
		l.r.slots.release(l) // no process came of this start
	}
	if l.life == laneClosing {
		l.closeLater(s)
		return
	}
	if err != nil || s == nil || gen != l.gen {
		l.moveSession(noSession) // failed (said below), or stale
	}
	if gen != l.gen {
		l.closeLater(s)
		return
	}
	if err != nil && resumed && errors.Is(err, driver.ErrHistoryLost) {
		// The agent has no record of the session (e.g. it died before saving
		// it): say so plainly and carry on in a fresh session.
		l.log.Warn("resume failed; starting a new session", "session_id", l.th.SessionID, "err", err)
		l.emit(chat.Error{Code: chat.CodeNoHistory, Message: "the earlier conversation could not be restored by the agent; this continues in a new session (" + err.Error() + ")"})
		l.th.SessionID = ""
		l.startSession()
		return
	}
	if err != nil {
		l.sessionFailed(err)
		return
	}
	if p, ok := s.(driver.Processor); ok {
		l.r.slots.started(l, p.PID())
	}
	l.setSession(s)
	l.revokeTools, kept = revoke, true
	state := "started"
	if resumed {
		state = "resumed"
	}
	l.emit(chat.SessionInfo{State: state, SessionID: l.th.SessionID})
	if l.turn == nil {
		l.th.State = chat.ThreadIdle
		l.bumpIdle()
		return
	}
	if t := l.turn; t.phase == awaitingSession {
		l.receipt(t.p, chat.DeliveryDelivering, "")
		l.prompt(t)
	}
}

// spec is what starts (or resumes) the thread's session with agent ag.
func (l *lane) spec(ag config.Agent) driver.Spec {
	spec := agentSpec(ag)
	spec.ThreadID, spec.Cwd, spec.ResumeID, spec.Mode, spec.Logger = l.th.ID, l.th.Cwd, l.th.SessionID, l.th.Mode, l.log
	// The mark that tells this thread's agent from a person's process on
	// the same session, even after parley was killed (notRunningElsewhere).
	spec.Env = append(spec.Env, procgroup.MarkEnv+"="+string(l.th.ID))
	if l.th.Model != "" {
		// The model the agent last said was in force, not its config's:
		// a resumed Claude Code otherwise takes its transcript's model id,
		// which loses the 1M-context suffix (issue 28, item 5).
		spec.Model = l.th.Model
	}
	l.termOptions(&spec)
	return spec
}

// sessionFailed ends a turn waiting for a session that could not start.
func (l *lane) sessionFailed(err error) {
	l.log.Warn("session start failed", "err", err)
	if l.term != nil && !errors.Is(err, chat.ErrSessionLimit) {
		// The person's process could not be followed (its pane or process
		// gone since it was taken): let go, so the next message looks at
		// the session afresh rather than fail on that process forever.
		l.dropTerminal()
	}
	l.th.State = chat.ThreadCrashed
	switch {
	case errors.Is(err, chat.ErrSessionLimit), errors.Is(err, chat.ErrSessionRunning):
		l.th.State = chat.ThreadUnloaded // nothing crashed: the next message tries again
	case errors.Is(err, chat.ErrUnknownAgent):
		l.th.State = chat.ThreadNoAgent // the config lost the agent; nothing ran
	}
	l.emit(chat.Error{Code: chat.CodeAgent, Message: "the agent could not be started: " + err.Error()})
	if t := l.turn; t != nil {
		l.receipt(t.p, chat.DeliveryFailed, "the agent could not be started: "+err.Error())
		l.finishTurn(t, "")
	}
}

func (l *lane) bumpIdle() {
	if l.sess == nil || l.turn != nil {
		return
	}
	l.r.slots.idle(l)
	l.idle.Reset(l.ag.IdleTimeout.Duration)
}

func (l *lane) onIdle() {
	if l.sess == nil || l.turn != nil || len(l.queue) > 0 || l.term != nil {
		return // a terminal's session is followed while it runs
	}
	l.log.Info("idle: unloading session")
	l.closeSession()
	l.th.State = chat.ThreadUnloaded
	l.emit(chat.SessionInfo{State: "unloaded", SessionID: l.th.SessionID})
}

// closeSession ends the live session without waiting for it.
func (l *lane) closeSession() {
	s := l.sess
	l.setSession(nil)
	l.gen++
	l.closeLater(s)
}

// closeLater closes s off the lane, after the sessions closed before it; the
// thread's next start waits for it (l.closed).
func (l *lane) closeLater(s driver.Session) {
	if s == nil {
		return
	}
	prev, done := l.closed, make(chan struct{})
	l.closed = done
	l.spawn(func() {
		defer close(done)
		if prev != nil {
			<-prev
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Close(ctx)
		l.r.slots.release(l) // the process is gone: its slot is free (slots.go)
	})
}

// tellSession runs a driver call off the lane; a failure is logged as an error event.
func (l *lane) tellSession(f func(context.Context, driver.Session) error) {
	l.tell(nil, f)
}

// tellInOrder is tellSession for a setting (mode, config option): it runs
// after the settings told before it have returned, so the agent ends in the
// one chosen last. Run side by side (as they were), "plan" then "default"
// picked quickly could reach Claude Code as default, then plan.
func (l *lane) tellInOrder(f func(context.Context, driver.Session) error) {
	if l.sess == nil {
		return
	}
	prev, done := l.settled, make(chan struct{})
	l.settled = done
	l.tell(func() {
		if prev != nil {
			<-prev
		}
	}, func(ctx context.Context, s driver.Session) error {
		defer close(done)
		return f(ctx, s)
	})
}

// tell runs f on the live session off the lane, after wait (when not nil).
func (l *lane) tell(wait func(), f func(context.Context, driver.Session) error) {
	s, gen := l.sess, l.gen
	if s == nil {
		return
	}
	l.spawn(func() {
		if wait != nil {
			wait()
		}
		ctx, cancel := context.WithTimeout(l.r.ctx, 30*time.Second)
		defer cancel()
		if err := f(ctx, s); err != nil {
			l.result(func() {
				if gen == l.gen {
					l.emit(chat.Error{Code: chat.CodeAgent, Message: err.Error()})
				}
			})
		}
	})
}

// recover settles what a previous run left: open cards of dead sessions are
// cancelled, a turn cut off mid-way ends with an error, a message cut off during
// delivery is judged by the agent's own record (checkCutOff), and queued
// messages wait for delivery.
func (l *lane) recover(ctx context.Context, pending []chat.Input, open []chat.Card) error {
	for i := range open {
		l.closeCard(&open[i], chat.CardExpired, nil)
	}
	if id := l.th.TurnMessageID; id != "" {
		// The turn's message is still delivering (its check ends the turn)
		// or was submitted.
		delivering := slices.ContainsFunc(pending, func(in chat.Input) bool {
			return in.MessageID == id && in.State == chat.DeliveryDelivering
		})
		// Still queued: its turn waited for the agent to start and nothing
		// was sent; it is queued again below.
		waited := slices.ContainsFunc(pending, func(in chat.Input) bool {
			return in.MessageID == id && in.State == chat.DeliveryQueued
		})
		if !delivering {
			if !waited {
				l.emit(chat.Error{Code: chat.CodeRestart, Message: "parley stopped during this turn; the answer may be incomplete", Ref: id})
				l.emit(chat.PromptDone{StopReason: chat.StopError, MessageID: id})
			}
			l.emit(chat.TurnStatus{Active: false})
			l.th.TurnMessageID = ""
		}
	}
	for _, in := range pending {
		p := &pendingInput{in: in}
		switch in.State {
		case chat.DeliveryDelivering:
			l.checkCutOff(p)
		case chat.DeliveryQueued:
			l.queue = append(l.queue, p)
			l.r.opt.Metrics.QueueDepth.Inc()
		}
	}
	l.th.State = chat.ThreadUnloaded
	return l.flush()
}

// checkTimeout bounds a driver's look into its agent's record at recovery.
const checkTimeout = 10 * time.Second

// checkCutOff asks the thread's driver, off the lane, whether a message parley
// was delivering when it stopped reached the agent: the agent may have read
// it, asked its model and kept it (a retry would give it twice), or never seen
// it. Its receipt stays "delivering", and the queue waits, until the answer.
func (l *lane) checkCutOff(p *pendingInput) {
	l.checking++
	drv, ag, err := l.driver()
	var spec driver.Spec
	if err == nil {
		spec = l.spec(ag)
	}
	m := driver.Sent{MessageID: p.in.MessageID, Text: p.in.Text}
	thread := l.th.ID
	l.spawn(func() {
		v, why := driver.VerdictUnknown, "the agent keeps no record parley can read"
		ctx, cancel := context.WithTimeout(l.r.ctx, checkTimeout)
		defer cancel()
		chk, ok := drv.(driver.DeliveryChecker)
		cerr := err
		if cerr == nil && ok {
			// Only a record made after the message went on its way can be
			// of it: an earlier message with the same text ("yes", said
			// while this one was queued) is kept before then.
			m.At, cerr = l.r.deliveringSince(ctx, thread, m.MessageID)
		}
		switch {
		case cerr != nil:
			why = cerr.Error()
		case ok:
			v, why = chk.CheckDelivery(ctx, spec, m)
		}
		// Not taken (parley is stopping): it stays delivering for the next start.
		l.result(func() { l.settleCutOff(p, v, why) })
	})
}

// deliveringTail is how far back in a thread's log deliveringSince looks: a
// message cut off while delivering is among the last events (its turn had
// not begun).
const deliveringTail = 512

// deliveringSince is when message id of thread went on its way to the agent:
// the time of its "delivering" receipt in the thread's log.
func (r *Router) deliveringSince(ctx context.Context, thread chat.ThreadID, id string) (time.Time, error) {
	evs, err := r.store.Tail(ctx, thread, deliveringTail)
	if err != nil {
		return time.Time{}, err
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type != chat.TypeDelivery {
			continue
		}
		var d chat.Delivery
		if json.Unmarshal(evs[i].Payload, &d) == nil && d.MessageID == id && d.State == chat.DeliveryDelivering {
			return evs[i].TS, nil
		}
	}
	return time.Time{}, errors.New("parley's log does not say when it was sent")
}

// settleCutOff gives a message cut off by a crash its receipt from the
// agent's record: "submitted" when the record holds it, "failed" only when it
// proves the agent never got it (so a retry delivers it once), "unknown"
// otherwise (never sent again). The turn it opened ends with it.
func (l *lane) settleCutOff(p *pendingInput, v driver.Verdict, why string) {
	l.checking--
	id := p.in.MessageID
	switch v {
	case driver.Delivered:
		l.receipt(p, chat.DeliverySubmitted, "")
		if id == l.th.TurnMessageID {
			l.emit(chat.Error{Code: chat.CodeRestart, Message: "parley stopped during this turn; the answer may be incomplete", Ref: id})
			l.emit(chat.PromptDone{StopReason: chat.StopError, MessageID: id})
		}
	case driver.NotDelivered:
		l.receipt(p, chat.DeliveryFailed, "parley stopped while delivering this message, and the agent never got it ("+why+")")
	default:
		l.receipt(p, chat.DeliveryUnknown, "parley stopped while delivering this message; it may or may not have reached the agent ("+why+"), so it is not sent again")
	}
	if id == l.th.TurnMessageID {
		l.emit(chat.TurnStatus{Active: false})
		l.th.TurnMessageID = ""
	}
	l.next()
}

// shutdown ends the session; a turn in flight ends with an error (cutOff or
// notSent says why), or, its message handed over unproven, stays open for the
// next start (unknown when the thread is deleting); queued messages stay
// queued for the next start.
func (l *lane) shutdown(cutOff, notSent string, deleting bool) {
	l.moveSession(laneClosing)
	if t := l.turn; t != nil {
		switch t.phase {
		case delivered:
			l.emit(chat.Error{Code: chat.CodeRestart, Message: cutOff, Ref: t.p.in.MessageID})
			l.finishTurn(t, chat.StopError)
		case prompting, handedOver:
			if deleting {
				// Gone with its thread: nobody will ask again.
				l.receipt(t.p, chat.DeliveryUnknown, "the thread was deleted while the message was being delivered")
				l.finishTurn(t, "")
				break
			}
			// The text is on its way or handed over, unproven: the agent
			// may have it. It stays "delivering", its turn open, for the
			// next start to judge by the agent's record, as after a crash
			// (checkCutOff); "failed" here could be false.
			l.move(t, over)
			t.cancelPrompt()
			if t.stopTimer != nil {
				t.stopTimer.Stop()
			}
			l.cancelCards(t.p.in.MessageID, "")
			l.turn = nil
		default:
			l.receipt(t.p, chat.DeliveryFailed, notSent)
			l.finishTurn(t, "")
		}
	}
	if l.sess != nil {
		s := l.sess
		l.setSession(nil)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = s.Close(ctx)
		cancel()
	}
	if l.closed != nil {
		// Sessions let go of earlier are still closing: end with them.
		select {
		case <-l.closed:
		case <-time.After(5 * time.Second):
		}
	}
	l.th.State = chat.ThreadUnloaded
	l.flush()
}

// unload ends the live session now, as the idle timer would: the person asked
// (the dashboard's live agents). Refused while the session works.
func (l *lane) unload() error {
	switch {
	case l.sess == nil:
		return fmt.Errorf("%w: the agent of this thread is not running", chat.ErrBadInput)
	case l.turn != nil || len(l.queue) > 0:
		return fmt.Errorf("%w: a turn is running: stop it first", chat.ErrBadInput)
	}
	l.log.Info("unloading the session, as asked")
	l.onIdle()
	return nil
}
