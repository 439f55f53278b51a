package stream

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// lockedBuffer is a log's output, written from the session's goroutines.
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

// The router's lane hands a session its own logger, which names the thread
// and agent already: each of the session's log lines says them once, not
// twice ("thread=t1 agent=claude thread=t1 agent=claude").
func TestSessionLogNamesTheThreadOnce(t *testing.T) {
	t.Parallel()
	r := newRig(t, slowScenario())
	var out lockedBuffer
	r.spec.Logger = slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug})).With("thread", "t1", "agent", "claude")
	s := r.start()
	r.prompt(s, "slow")
	r.sink.waitTurns(t, 1)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) == 0 || lines[0] == "" {
		t.Fatal("the session logged nothing at debug level")
	}
	for _, l := range lines {
		if strings.Count(l, "thread=") != 1 || strings.Count(l, "agent=") != 1 {
			t.Errorf("a log line without its thread and agent once each:\n%s", l)
		}
	}
}
