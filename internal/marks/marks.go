// Package marks records where a turn's time goes as it crosses the daemon's
// goroutines: the socket's reader, the router, the lane and its commits, the
// hub, the driver's stdin writer and stdout reader, each socket's writer. A
// benchmark turns it on (Set) and lines the marks up by time; nothing else
// does, and while it is off a mark costs one atomic load (Start returns the
// zero time and End does nothing with it).
package marks

import (
	"sync/atomic"
	"time"
)

// Mark is one stage: what it was, what it was of (an event type, a line's
// type: whatever tells one such stage from another), when it began and how
// long it took.
type Mark struct {
	Stage string
	Of    string
	At    time.Time
	Took  time.Duration
}

var hook atomic.Pointer[func(Mark)]

// Set makes every mark call f, from any goroutine (f must be safe for that
// and quick); nil turns marks off.
func Set(f func(Mark)) {
	if f == nil {
		hook.Store(nil)
		return
	}
	hook.Store(&f)
}

// Start is the time a stage begins, or the zero time when marks are off.
func Start() time.Time {
	if hook.Load() == nil {
		return time.Time{}
	}
	return time.Now()
}

// On reports whether marks are recorded: a caller whose Of costs something
// to build builds it only then.
func On() bool { return hook.Load() != nil }

// End records the stage begun at start (from Start), ending now.
func End(stage, of string, start time.Time) {
	if start.IsZero() {
		return
	}
	if f := hook.Load(); f != nil {
		(*f)(Mark{Stage: stage, Of: of, At: start, Took: time.Since(start)})
	}
}
