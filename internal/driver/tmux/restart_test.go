package tmux

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/tmux/ctl"
	"github.com/parleyhq/parley/internal/testkit"
)

// restarted returns the "restarted" session events a sink got.
func (s *sink) restarted() []chat.SessionInfo {
	var out []chat.SessionInfo
	for _, p := range s.snapshot() {
		if si, ok := p.(chat.SessionInfo); ok && si.State == "restarted" {
			out = append(out, si)
		}
	}
	return out
}

// sessionID waits for the agent's session id (its SessionStart hook).
func (s *sink) sessionID(t *testing.T) string {
	t.Helper()
	testkit.Eventually(t, 30*time.Second, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.ids) > 0
	}, "no session id")
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ids[0]
}

// resumedAfterDeath: the first message is answered, the agent is made to go
// (kill, leaving the pane dead or at a shell), and the next send starts it
// again with its conversation: the model gets the new message with the old
// one before it, and the thread is told the agent was restarted.
func resumedAfterDeath(t *testing.T, h *harness, s *session, k *sink, kill func(), gone func(ctl.PaneInfo) bool) {
	t.Helper()
	if err := h.prompt(s, "m1", "hello"); err != nil {
		t.Fatalf("first Prompt: %v", err)
	}
	waitTurns(t, k, 1)
	id := k.sessionID(t)
	kill()
	testkit.Eventually(t, 20*time.Second, func() bool {
		info, err := h.c.Pane(context.Background(), s.pane)
		return err == nil && gone(info)
	}, "the pane never showed the agent gone")
	if err := h.prompt(s, "m2", "after the restart"); err != nil {
		t.Fatalf("Prompt after the agent died: got %v, want it restarted and the message submitted", err)
	}
	waitTurns(t, k, 2)
	if got := h.personTexts(); !slices.Equal(got, []string{"hello", "after the restart"}) {
		t.Errorf("the model got %q, want the conversation resumed: [hello, after the restart]", got)
	}
	r := k.restarted()
	if len(r) != 1 || r[0].SessionID != id || !strings.Contains(r[0].Detail, "resuming") {
		t.Errorf("restarted events %+v, want one resuming session %s", r, id)
	}
	if ex := func() int { k.mu.Lock(); defer k.mu.Unlock(); return len(k.exited) }(); ex != 0 {
		t.Errorf("Exited reported %d times for a session that lives on", ex)
	}
}

// A dead pane (tmux keeps it with remain-on-exit) is not a shell: the next
// send starts the agent again in it, resuming.
func TestDeadPaneIsRestarted(t *testing.T) {
	h := newHarness(t, scenario())
	s, k := h.start("t-dead")
	ctx := context.Background()
	if _, err := h.c.Run(ctx, "set-option", "-w", "-t", ctl.SessionTarget(s.name), "remain-on-exit", "on"); err != nil {
		t.Fatal(err)
	}
	resumedAfterDeath(t, h, s, k, func() {
		info, err := h.c.Pane(ctx, s.pane)
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(info.PID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}, func(info ctl.PaneInfo) bool { return info.Dead })
}

// An agent that exits leaving a shell in the pane (its command was a
// wrapper) is started again by the next send, resuming.
func TestShellLeftInPaneIsRestarted(t *testing.T) {
	h := newHarness(t, scenario())
	wrapper := filepath.Join(t.TempDir(), "agent.sh")
	// set -m: the agent runs as the terminal's foreground job, so tmux names
	// it (not sh) as the pane's command until it exits.
	script := "#!/bin/sh\nset -m\n'" + h.claud + "' \"$@\"\nexec bash --norc --noprofile -i\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	spec := h.spec("t-shell")
	spec.Command = wrapper
	k := newSink()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	sess, err := h.drv.Start(ctx, spec, k)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = sess.Close(context.Background()) })
	s := sess.(*session)
	// The wrapper's child is Claude Code.
	agent := func() int {
		info, err := h.c.Pane(ctx, s.pane)
		if err != nil {
			t.Fatal(err)
		}
		kids, err := os.ReadFile("/proc/" + strconv.Itoa(info.PID) + "/task/" + strconv.Itoa(info.PID) + "/children")
		if err != nil || len(strings.Fields(string(kids))) != 1 {
			t.Fatalf("the wrapper's children: %q %v", kids, err)
		}
		pid, _ := strconv.Atoi(strings.Fields(string(kids))[0])
		return pid
	}
	resumedAfterDeath(t, h, s, k, func() {
		if err := syscall.Kill(agent(), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}, func(info ctl.PaneInfo) bool { return info.CurrentCommand == "bash" })
	// The restarted agent is its own job (set -m): the session's end does not
	// take it down with the wrapper, so it goes first, before its HOME does.
	again := agent()
	t.Cleanup(func() { _ = syscall.Kill(again, syscall.SIGKILL) })
}

// The person's own session is theirs: a dead pane there is reported as dead
// (not as a shell), with what to do, and nothing is started in it.
func TestAdoptedDeadPaneIsReported(t *testing.T) {
	h := newHarness(t, scenario())
	ctx := context.Background()
	if err := h.c.NewSession(ctx, ctl.NewSessionOptions{Name: "theirs", Cwd: h.cwd, Argv: []string{"cat", "-v"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.c.Run(ctx, "set-option", "-w", "-t", ctl.SessionTarget("theirs"), "remain-on-exit", "on"); err != nil {
		t.Fatal(err)
	}
	info, err := h.c.Pane(ctx, ctl.SessionTarget("theirs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(info.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, func() bool {
		info, err := h.c.Pane(ctx, ctl.SessionTarget("theirs"))
		return err == nil && info.Dead
	}, "the pane never died")
	spec := h.spec("t-theirs")
	spec.Options[OptAdopt] = "theirs"
	k := newSink()
	sess, err := h.drv.Start(ctx, spec, k)
	if err != nil {
		t.Fatalf("Start (adopt a dead pane): %v", err)
	}
	t.Cleanup(func() { _ = sess.Close(ctx) })
	err = sess.Prompt(ctx, driver.Prompt{MessageID: "m1", Text: "hello"})
	if !errors.Is(err, ErrDeadPane) || errors.Is(err, ErrBareShell) || !strings.Contains(err.Error(), "respawn-pane") {
		t.Fatalf("Prompt into their dead pane: got %v, want %v saying how to restart it", err, ErrDeadPane)
	}
	if after, err := h.c.Pane(ctx, ctl.SessionTarget("theirs")); err != nil || !after.Dead {
		t.Errorf("their pane after the send: %+v %v, want it left dead", after, err)
	}
	if len(k.restarted()) != 0 {
		t.Error("parley restarted something in the person's session")
	}
}
