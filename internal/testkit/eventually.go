package testkit

import (
	"fmt"
	"testing"
	"time"
)

// Eventually polls cond every few milliseconds until it is true or within
// passes, then fails the test with msg (formatted with args at that moment:
// a Later in args says what was seen at the deadline). Use it instead of
// sleeping, and instead of a polling loop of the test's own.
func Eventually(t testing.TB, within time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	if !Within(within, cond) {
		t.Fatalf("after %v: "+msg, append([]any{within}, args...)...)
	}
}

// Within polls cond every few milliseconds until it is true (true) or d
// passes (false): Eventually for a caller that reports the failure itself
// (a benchmark's b.Fatal, a goroutine that is not the test's).
func Within(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// Later is a detail for Eventually's message worked out only when it fails:
// what f returns then, not when the wait began.
type Later func() any

func (l Later) String() string { return fmt.Sprint(l()) }
