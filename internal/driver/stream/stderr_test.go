package stream

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/testkit"
)

// The process dying mid-turn: the error event carries the tail of its stderr, so
// a person reads why. The command is a wrapper around the real Claude Code that,
// once the answer streams, says a known line on stderr and kills its whole
// process group (itself and Claude Code).
func TestCrashMidTurnCarriesStderrTail(t *testing.T) {
	t.Parallel()
	const lastWords = "wrapper: out of memory in the frobnicator (test line 7f3a)"
	r := newRig(t, slowScenario())
	claude := testkit.ClaudeBin(t)
	if strings.ContainsRune(claude, '\'') {
		t.Fatalf("the claude path %q cannot be single-quoted", claude)
	}
	wrapper := filepath.Join(t.TempDir(), "dying-claude")
	script := "#!/bin/bash\n" +
		"'" + claude + "' \"$@\" | while IFS= read -r line; do\n" +
		"  printf '%s\\n' \"$line\"\n" +
		"  case \"$line\" in *'\"text_delta\"'*)\n" +
		"    echo '" + lastWords + "' >&2\n" +
		"    kill -KILL 0 ;;\n" +
		"  esac\n" +
		"done\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	r.spec.Command = wrapper
	s := r.start()
	r.prompt(s, "slow")
	if got := r.sink.waitTurns(t, 1); got[0] != chat.StopError {
		t.Fatalf("turn: got %v, want error", got)
	}
	e := first[chat.Error](t, r.sink)
	if e.Code != chat.CodeAgent || !strings.Contains(e.Message, lastWords) || !strings.Contains(e.Message, "killed") {
		t.Fatalf("error event: got %+v, want agent_error with the exit status and the stderr line %q", e, lastWords)
	}
	// It was mid-turn: the answer had begun streaming.
	if r.sink.chunks() == 0 {
		t.Errorf("no chunk before the crash: the wrapper died before the turn streamed")
	}
	testkit.Eventually(t, 10*time.Second, func() bool {
		r.sink.mu.Lock()
		defer r.sink.mu.Unlock()
		return len(r.sink.exits) == 1 && r.sink.exits[0] != nil && strings.Contains(r.sink.exits[0].Error(), lastWords)
	}, "Exited reports the error with the stderr line")
}
