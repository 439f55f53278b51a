package testkit

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// fatalRecorder is a testing.TB whose Fatalf records the message (and does
// not end the goroutine), so Eventually's failure can be read.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}
func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
}

// Eventually returns once cond holds; at the deadline it fails with the
// message, and a Later in it says what was seen then, not at the start.
func TestEventuallyReportsWhatWasSeenAtTheDeadline(t *testing.T) {
	t.Parallel()
	n := 0
	r := &fatalRecorder{TB: t}
	Eventually(r, time.Minute, func() bool { n++; return n == 3 }, "never three")
	if r.msg != "" || n != 3 {
		t.Fatalf("a condition true at the third look: failed %q after %d looks", r.msg, n)
	}

	seen := 0
	Eventually(r, 30*time.Millisecond, func() bool { seen++; return false }, "looked %v times", Later(func() any { return seen }))
	if !strings.HasPrefix(r.msg, "after 30ms: looked ") || r.msg == "after 30ms: looked 0 times" || r.msg != fmt.Sprintf("after 30ms: looked %d times", seen) {
		t.Fatalf("failure message %q, want the looks counted at the deadline (%d)", r.msg, seen)
	}
}

// Within says whether cond came true in time, failing nothing.
func TestWithin(t *testing.T) {
	t.Parallel()
	if !Within(time.Minute, func() bool { return true }) {
		t.Error("a condition already true: Within said false")
	}
	if Within(10*time.Millisecond, func() bool { return false }) {
		t.Error("a condition never true: Within said true")
	}
}
