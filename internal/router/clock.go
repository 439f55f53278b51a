// The clock a lane reads time and sets its timers by.

package router

import "time"

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
