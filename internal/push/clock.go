package push

import "time"

// Clock is where the sender reads the time and waits for its next pass: a
// push due, a failed push's backoff, a store's refusal waited out. The zero
// Options use the runtime's; a test gives one it moves on by hand, so the
// minutes a retry waits pass at once.
type Clock interface {
	Now() time.Time
	// After sends the time once d has passed.
	After(d time.Duration) <-chan time.Time
}

// realClock is the runtime's time.
type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
