package tmux

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/tmux/hook"
	"github.com/parleyhq/parley/internal/testkit"
)

// The agent goes away: Exited is reported and a send fails saying the session is gone.
func TestAgentExit(t *testing.T) {
	h := newHarness(t, scenario())
	s, k := h.start("t-exit")
	info, err := h.c.Pane(context.Background(), s.name)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(info.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, func() bool {
		k.mu.Lock()
		defer k.mu.Unlock()
		return len(k.exited) == 1
	}, "Exited never reported")
	if err := h.prompt(s, "m1", "hello"); !errors.Is(err, ErrGone) || !errors.Is(err, driver.ErrNotRunning) {
		t.Errorf("Prompt after the agent exited: got %v, want %v", err, ErrGone)
	}
}

// A turn whose prompt was submitted before a send began is not the send's,
// even when its prompt holds the send's text: the person stopped "yes, do it
// the other way" and then sent "yes"; the first turn's end, arriving while
// "yes" waits to be typed, must not end the "yes" turn. The turn of a prompt
// submitted after the send began, holding its text, is the send's.
func TestOwnsTurnOnlyForAPromptAfterTheSendBegan(t *testing.T) {
	t.Parallel()
	s := &session{promptSeen: make(chan struct{})}
	s.hookEvent(hook.Event{Name: "UserPromptSubmit", Prompt: "yes, do it the other way"})
	s.beginSend("yes")
	s.mu.Lock()
	owns := s.ownsTurn()
	s.mu.Unlock()
	if owns {
		t.Fatal("a turn submitted before the send began counts as the send's")
	}
	s.hookEvent(hook.Event{Name: "UserPromptSubmit", Prompt: "yes"})
	s.mu.Lock()
	owns = s.ownsTurn()
	s.mu.Unlock()
	if !owns {
		t.Fatal("the send's own turn is not the send's")
	}
	s.beginSend("")
	s.mu.Lock()
	owns = s.ownsTurn()
	s.mu.Unlock()
	if !owns {
		t.Fatal("with no send in flight, a turn is not the lane's")
	}
}
