// An agent's own session continued in parley, and handed back to a terminal.

package router

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/procgroup"
)

// ResumeSession attaches an agent's native session to a route: the thread that
// holds it, or a new one. A session parley's agent does not run now is
// continued: the turns its own record holds that the thread does not yet
// show (all of them for a new thread; those a terminal added since, for a
// thread handed back) are imported into the thread's log, marked as from
// before parley, before ResumeSession returns. A session a process parley
// did not start runs now is refused (chat.ErrSessionRunning): a second
// process on it would fork it.
func (r *Router) ResumeSession(ctx context.Context, from chat.RouteKey, agent, sessionID, cwd string) (chat.ThreadID, error) {
	return r.ContinueSession(ctx, from, ResumeIntent{Agent: agent, SessionID: sessionID, Cwd: cwd})
}

// RemoteResumer is a Remote that continues a session on another machine:
// the thread is made (or found) there, and its id returned.
type RemoteResumer interface {
	Resume(ctx context.Context, from chat.RouteKey, ri ResumeIntent) (chat.ThreadID, error)
}

// ContinueSession is ResumeSession on the machine ri.Node names: at a
// cluster's hub, another machine continues it (its agents, its roots, its
// checks) and the route shows that machine's thread.
func (r *Router) ContinueSession(ctx context.Context, from chat.RouteKey, ri ResumeIntent) (chat.ThreadID, error) {
	var term *terminal
	id, err := r.continueSession(ctx, from, ri, &term)
	if err == nil {
		r.recordContinue(ctx, from, ri, id, term)
	}
	return id, err
}

// continueSession is ContinueSession; *took is the terminal it adopted or
// watches, if any.
func (r *Router) continueSession(ctx context.Context, from chat.RouteKey, ri ResumeIntent, took **terminal) (chat.ThreadID, error) {
	if err := ri.Validate(); err != nil {
		return "", err
	}
	if ri.Node != "" && ri.Node != r.opt.Node {
		rm := r.opt.Remote
		if rm == nil {
			return "", invalid("node %q: this parley is machine %q, not a cluster's hub", ri.Node, r.opt.Node)
		}
		if ri.Node != rm.Local() {
			rr, ok := rm.(RemoteResumer)
			if !ok {
				return "", invalid("node %q: this hub cannot continue sessions on its machines", ri.Node)
			}
			id, err := rr.Resume(ctx, from, ri)
			if err != nil {
				return "", err
			}
			return id, r.call(ctx, func() error {
				if err := r.dropAsk(ctx, from); err != nil {
					return err
				}
				return r.attach(ctx, from, id)
			})
		}
	}
	agent, sessionID, cwd := ri.Agent, ri.SessionID, ri.Cwd
	drv, ag, err := r.Driver(agent)
	if err != nil {
		return "", err
	}
	dir, err := config.Confine(cwd, ag.Roots)
	if err != nil {
		return "", err
	}
	spec := agentSpec(ag)
	spec.Cwd, spec.ResumeID = dir, sessionID
	// Running in a person's terminal: its tmux pane is adopted, a plain
	// terminal watched when asked; anything else running it is refused.
	term, err := r.terminalOf(ctx, drv, spec, ri.Watch)
	if err != nil {
		return "", err
	}
	*took = term
	if term == nil {
		if err := r.notRunningElsewhere(ctx, drv, spec); err != nil {
			return "", err
		}
	}
	var id chat.ThreadID
	var l *lane
	err = r.call(ctx, func() error {
		var err error
		if id, err = r.resumeThread(ctx, from, ag.ID, sessionID, dir); err != nil {
			return err
		}
		l, err = r.lane(ctx, id)
		return err
	})
	if err != nil {
		return id, err
	}
	if term != nil {
		if err := l.onLane(ctx, func(reply func(error)) { reply(l.takeTerminal(term)) }); err != nil {
			return id, err
		}
	}
	if hr, ok := drv.(driver.HistoryReader); ok { // else the agent replays its past itself (ACP session/load), or keeps none
		if err := l.onLane(ctx, func(reply func(error)) { l.continueHere(hr, reply) }); err != nil {
			return id, err
		}
	}
	if term == nil {
		return id, nil
	}
	// Followed from now on: the pane's cards and the transcript's words
	// reach the thread before anyone writes to it.
	return id, l.onLane(ctx, func(reply func(error)) { l.startSession(); reply(nil) })
}

// agentSpec is the part of a driver.Spec that comes from the agent's config.
func agentSpec(ag config.Agent) driver.Spec {
	env := make([]string, 0, len(ag.Env))
	for k, v := range ag.Env {
		env = append(env, k+"="+v)
	}
	return driver.Spec{AgentID: ag.ID, Command: ag.Command, Args: ag.Args, Env: env, Model: ag.Model, Options: ag.Options}
}

// notRunningElsewhere refuses spec.ResumeID when a process other than one of
// parley's own agents runs it now. It is asked off the lanes: it reads files.
func (r *Router) notRunningElsewhere(ctx context.Context, drv driver.Driver, spec driver.Spec) error {
	rc, ok := drv.(driver.RunChecker)
	if !ok {
		return nil // the agent keeps no record of its running sessions: nothing to check
	}
	pid, err := rc.RunningNow(ctx, spec)
	if err != nil {
		return fmt.Errorf("%w: %v", chat.ErrBadInput, err)
	}
	if pid == 0 {
		return nil
	}
	for _, s := range r.slots.list() {
		if s.PID == pid {
			return nil // parley's own process: its thread holds the session
		}
	}
	if procgroup.Marked(pid, string(spec.ThreadID)) {
		// This thread's agent, left by a parley that was killed: its stdin
		// went with that parley, so nobody can talk to it again. End it
		// rather than refuse the thread its own session.
		r.log.Info("router: ending the agent process a killed parley left on this session",
			"thread", spec.ThreadID, "session", spec.ResumeID, "pid", pid)
		ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		if err := procgroup.End(ctx, pid, 5*time.Second); err != nil {
			return fmt.Errorf("%w (%s session %s: the agent process a previous run of parley left, pid %d, did not end: %v)",
				chat.ErrSessionRunning, spec.AgentID, spec.ResumeID, pid, err)
		}
		return nil
	}
	ways := "go on there, watch it here, or end it there and continue here"
	if _, ok := drv.(driver.TerminalTaker); !ok {
		ways = "go on there, or end it there and continue here" // parley cannot follow this agent's terminal
		if pa, ok := drv.(driver.PaneAdopter); ok && pa.PaneTUI(spec) != "" {
			// Only a pane is adopted: this one runs elsewhere.
			ways += "; started in a tmux pane, it is adopted here"
		}
	}
	return fmt.Errorf("%w (%s session %s, pid %d, not started by parley: a terminal perhaps); "+
		"two processes on one session fork it: %s",
		chat.ErrSessionRunning, spec.AgentID, spec.ResumeID, pid, ways)
}

// continueHere imports the turns of the thread's session that its log does
// not show yet, when parley's agent does not run the session now (when it
// does, the log has everything it said). What the log shows is what came
// before its newest event: a turn the agent recorded later was added
// elsewhere (a terminal, after a hand back or an unload). The record is
// read off the lane; the import is one commit.
func (l *lane) continueHere(hr driver.HistoryReader, reply func(error)) {
	if l.life != noSession {
		reply(nil)
		return
	}
	since, err := l.newestEventTime()
	if err != nil {
		reply(err)
		return
	}
	spec := l.spec(l.ag)
	l.spawn(func() {
		ctx, cancel := context.WithTimeout(l.r.ctx, time.Minute)
		defer cancel()
		turns, err := hr.History(ctx, spec)
		if !l.result(func() { l.imported(turns, since, err, reply) }) {
			reply(chat.ErrClosed)
		}
	})
}

// imported writes the turns recorded after since into the log, marked as
// from before parley. A session without a record yet (Claude Code writes its
// transcript a moment after a turn) imports nothing: the agent's resume says
// whether it knows the session.
func (l *lane) imported(turns []driver.Turn, since time.Time, err error, reply func(error)) {
	if errors.Is(err, driver.ErrUnsupported) {
		reply(nil) // parley reads no record of this agent's: nothing to import
		return
	}
	if err != nil && !errors.Is(err, driver.ErrHistoryLost) {
		reply(err)
		return
	}
	if l.life != noSession {
		reply(nil) // a message started the agent meanwhile: it has the session now
		return
	}
	n, tools, last := 0, 0, ""
	for _, t := range turns {
		if !since.IsZero() && !t.At.After(since) {
			continue
		}
		switch t.Role {
		case driver.TurnUser:
			if l.th.Title == "" {
				l.th.Title = titleOf(t.Text)
			}
			l.emit(chat.UserMessage{MessageID: t.ID, Text: t.Text, Imported: true})
			// Its receipt, so that no client shows it waiting.
			l.emit(chat.Delivery{MessageID: t.ID, State: chat.DeliverySubmitted})
		case driver.TurnAgent:
			text := t.Text
			if last == driver.TurnAgent {
				text = "\n\n" + text // the same answer, in another record
			}
			l.emit(chat.AgentChunk{Text: text, MessageID: t.ID, Imported: true})
		case driver.TurnTool:
			// It ran then: shown ended (its status its end), never as a
			// call in flight.
			if t.Tool == nil {
				continue
			}
			tc := *t.Tool
			tc.Imported = true
			l.emit(tc)
			if t.Result != nil {
				u := *t.Result
				u.Imported = true
				l.emit(u)
			}
			tools, last = tools+1, t.Role
			continue
		}
		n, last = n+1, t.Role
	}
	if l.th.State == chat.ThreadHandedBack {
		l.th.State = chat.ThreadUnloaded
	}
	detail := fmt.Sprintf("%d earlier messages imported from the agent's record", n)
	if n == 1 {
		detail = "1 earlier message imported from the agent's record"
	}
	switch {
	case tools == 1:
		detail += " (and 1 tool call)"
	case tools > 1:
		detail += fmt.Sprintf(" (and %d tool calls)", tools)
	}
	l.emit(chat.SessionInfo{State: "continued", SessionID: l.th.SessionID, Detail: detail})
	l.log.Info("session continued here", "session_id", l.th.SessionID, "imported", n)
	reply(l.flush())
}

// newestEventTime is when the thread's newest event was written (zero for an
// empty log).
func (l *lane) newestEventTime() (time.Time, error) {
	if n := len(l.batch.Events); n > 0 {
		return l.batch.Events[n-1].TS, nil
	}
	ctx, cancel := context.WithTimeout(l.r.ctx, 10*time.Second)
	defer cancel()
	evs, err := l.store.Tail(ctx, l.th.ID, 1)
	if err != nil || len(evs) == 0 {
		return time.Time{}, err
	}
	return evs[0].TS, nil
}
