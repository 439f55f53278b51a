package router

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/parleyhq/parley/internal/chat"
)

// slots caps the agent sessions running at once (limits.max_sessions). A lane
// takes a slot before it starts a session and gives it back once the session's
// Close has returned (closeLater), so the cap counts processes still exiting. When every slot is taken, the least recently used idle session is
// unloaded to make room (it resumes on its next message, as after an idle
// unload); when none is idle, the start is refused with words a person can act
// on. Guarded by mu: the lanes that hold slots call in from their goroutines.
type slots struct {
	max int
	now func() time.Time

	mu      sync.Mutex
	held    map[*lane]*slot
	changed chan struct{} // closed and replaced when a slot frees or an unload is declined
}

type slot struct {
	live      chat.LiveSession // what the dashboard shows of it (pid once started)
	busy      bool             // a turn runs (or the session is starting)
	idleSince time.Time        // when the session last went idle
	evicting  bool             // asked to unload; waiting for its answer
}

func newSlots(max int, now func() time.Time) *slots {
	return &slots{max: max, now: now, held: map[*lane]*slot{}, changed: make(chan struct{})}
}

// signal wakes waiters; mu must be held.
func (s *slots) signalLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// acquire takes a slot for l, unloading the least recently used idle session
// when all are taken. It returns chat.ErrSessionLimit when every session is busy.
func (s *slots) acquire(ctx context.Context, l *lane, live chat.LiveSession) error {
	for {
		s.mu.Lock()
		if _, ok := s.held[l]; ok || len(s.held) < s.max {
			live.Since = s.now()
			s.held[l] = &slot{busy: true, live: live}
			s.mu.Unlock()
			return nil
		}
		var victim *lane
		var pending bool // an unload already asked for will free a slot
		for o, st := range s.held {
			switch {
			case st.evicting:
				pending = true
			case !st.busy && (victim == nil || st.idleSince.Before(s.held[victim].idleSince)):
				victim = o
			}
		}
		if victim != nil {
			s.held[victim].evicting = true
		}
		changed := s.changed
		s.mu.Unlock()
		switch {
		case victim != nil:
			if !victim.unloadForRoom() {
				s.declined(victim)
			}
		case !pending:
			return fmt.Errorf("%w: %d agent sessions are running, the most limits.max_sessions allows, and none is idle; "+
				"send again when a turn ends, or stop one", chat.ErrSessionLimit, s.max)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// started records the process of l's session (0 when its driver runs none of
// its own, or does not say).
func (s *slots) started(l *lane, pid int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.held[l]; ok {
		st.live.PID = pid
	}
}

// list is every session holding a slot: starting, live, or still exiting.
func (s *slots) list() []chat.LiveSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]chat.LiveSession, 0, len(s.held))
	for _, st := range s.held {
		ls := st.live
		ls.Busy = st.busy
		out = append(out, ls)
	}
	return out
}

// release gives l's slot back (a no-op when it holds none).
func (s *slots) release(l *lane) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.held[l]; ok {
		delete(s.held, l)
		s.signalLocked()
	}
}

// busy and idle record what l's session is doing, for the choice of whom to unload.
func (s *slots) busy(l *lane) { s.mark(l, true) }
func (s *slots) idle(l *lane) { s.mark(l, false) }

func (s *slots) mark(l *lane, busy bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.held[l]; ok {
		st.busy = busy
		if !busy {
			st.idleSince = s.now()
		}
	}
}

// declined says l did not unload (it became busy, or it could not be asked).
func (s *slots) declined(l *lane) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.held[l]; ok {
		st.evicting = false
		st.busy = true
	}
	s.signalLocked()
}

// unloadForRoom asks l to unload its session if it is still idle; false when
// it could not be asked. Called from any goroutine.
func (l *lane) unloadForRoom() bool {
	f := func() {
		if l.sess == nil || l.turn != nil || len(l.queue) > 0 {
			l.r.slots.declined(l)
			return
		}
		l.log.Info("unloading the least recently used idle session to make room for another (limits.max_sessions)")
		l.onIdle()
		if l.sess != nil {
			l.r.slots.declined(l)
		}
	}
	select {
	case l.ctrl <- f:
		return true
	default:
		return false
	}
}
