// The lane's session as a state: its phases and their transitions, and the
// clock a lane reads time and sets its timers by.

package router

import (
	"slices"
	"time"

	"github.com/parleyhq/parley/internal/driver"
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

// clock is where a lane reads the time (Options.Now) and sets its timers: the
// stop grace and the idle unload. The timers are the runtime's; inside a
// testing/synctest bubble they run on the bubble's fake time, which is how
// the router's tests pass minutes of them in milliseconds.
type clock struct {
	now func() time.Time
}

func (c clock) Now() time.Time { return c.now() }

// AfterFunc runs f on its own goroutine after d (the stop grace).
func (c clock) AfterFunc(d time.Duration, f func()) *time.Timer { return time.AfterFunc(d, f) }

// NewTimer is a stopped timer for the lane's loop to select on (idle unload).
func (c clock) NewTimer() *time.Timer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}
