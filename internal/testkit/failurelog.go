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
	buf := &LockedBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the daemon's log:\n%s", buf.String())
		}
	})
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// LockedBuffer is a log's destination that a test reads while the code
// under test writes it from its goroutines.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
