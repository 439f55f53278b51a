package testkit

import (
	"bytes"
	"log/slog"
	"sync"
	"testing"
)

// FailureLog is a debug logger for a daemon under test whose lines are
// printed only when the test fails: a failure that shows up once in forty
// runs comes with what the daemon did.
func FailureLog(t testing.TB) *slog.Logger {
	t.Helper()
	buf := &lockedBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the daemon's log:\n%s", buf.String())
		}
	})
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// lockedBuffer is a bytes.Buffer safe for the daemon's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
