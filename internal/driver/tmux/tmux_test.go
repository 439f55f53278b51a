package tmux

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"syscall"

	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/tmux/ctl"
	"github.com/parleyhq/parley/internal/driver/tmux/pane"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

func scenario() claudeapi.Scenario {
	return claudeapi.Scenario{
		Rules: []claudeapi.Rule{
			{Match: claudeapi.Match{Exact: "hello"}, Reply: claudeapi.Text("Hello from the stand-in.", 3, 5*time.Millisecond)},
			{Match: claudeapi.Match{Exact: "run it"}, Reply: claudeapi.Bash("touch made-by-bash", "Make a file")},
			{Match: claudeapi.Match{ToolResult: "Bash"}, Reply: claudeapi.Text("The command ran.", 1, 0)},
			{Match: claudeapi.Match{Exact: "ask"}, Reply: claudeapi.ToolUse("AskUserQuestion", map[string]any{
				"questions": []map[string]any{{"question": "Which color do you prefer?", "header": "Color", "multiSelect": false,
					"options": []map[string]string{{"label": "Blue", "description": "The color of the sky"}, {"label": "Red", "description": "The color of fire"}}}}})},
			{Match: claudeapi.Match{ToolResult: "AskUserQuestion"}, Reply: claudeapi.Text("Thanks for the answer.", 1, 0)},
		},
		Default: &claudeapi.Reply{Blocks: []claudeapi.Block{{Type: claudeapi.BlockText, Text: "OK."}}},
	}
}

// 1: a message is submitted and the model's answer arrives as agent_chunks from the transcript.
func TestPromptSubmittedAndAnswered(t *testing.T) {
	h := newHarness(t, scenario())
	s, k := h.start("t1")
	if err := h.prompt(s, "m1", "hello"); err != nil {
		t.Fatalf("Prompt: got %v, want nil (submitted)", err)
	}
	testkit.Eventually(t, 30*time.Second, func() bool { return strings.Contains(k.text(), "Hello from the stand-in.") },
		"agent text never arrived; got %q", k.text())
	testkit.Eventually(t, 30*time.Second, func() bool { return k.turnCount() == 1 }, "turn never ended")
	if got := h.personTexts(); len(got) != 1 || got[0] != "hello" {
		t.Errorf("model got person texts %q, want [hello]", got)
	}
}

func lastPersonText(h *harness) string {
	got := h.personTexts()
	if len(got) == 0 {
		return ""
	}
	return got[len(got)-1]
}

func waitTurns(t *testing.T, k *sink, n int) {
	t.Helper()
	testkit.Eventually(t, 30*time.Second, func() bool { return k.turnCount() >= n }, "turn %d never ended", n)
}

// 2: text typed into the box by hand is cleared, and exactly the message is submitted.
func TestPromptClearsStagedText(t *testing.T) {
	h := newHarness(t, scenario())
	s, k := h.start("t2")
	ctx := context.Background()
	if err := h.c.SendLiteral(ctx, s.name, "typed by hand but never sent"); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, func() bool {
		scr, err := s.capture(ctx)
		return err == nil && scr.Staged() == "typed by hand but never sent"
	}, "the hand-typed text never showed in the box")
	if err := h.prompt(s, "m1", "hello"); err != nil {
		t.Fatalf("Prompt: got %v, want nil", err)
	}
	waitTurns(t, k, 1)
	if got, want := h.personTexts(), []string{"hello"}; !slices.Equal(got, want) {
		t.Errorf("model got %q, want %q", got, want)
	}
}

// 3: a pane left in copy-mode still gets the message.
func TestPromptLeavesCopyMode(t *testing.T) {
	h := newHarness(t, scenario())
	s, k := h.start("t3")
	ctx := context.Background()
	if _, err := h.c.Run(ctx, "copy-mode", "-t", s.name); err != nil {
		t.Fatal(err)
	}
	if info, err := h.c.Pane(ctx, s.name); err != nil || !info.InMode {
		t.Fatalf("pane not in copy-mode: %+v %v", info, err)
	}
	if err := h.prompt(s, "m1", "hello"); err != nil {
		t.Fatalf("Prompt: got %v, want nil", err)
	}
	waitTurns(t, k, 1)
	if got := lastPersonText(h); got != "hello" {
		t.Errorf("model got %q, want hello", got)
	}
}

// 7: an agent stopped with SIGSTOP renders nothing: failed with the keyboard
// reason, never submitted, and the text does not land once it runs again.
func TestPromptStoppedAgentFails(t *testing.T) {
	h := newHarness(t, scenario())
	s, k := h.start("t7")
	info, err := h.c.Pane(context.Background(), s.name)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(info.PID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	cont := sync.OnceFunc(func() { _ = syscall.Kill(info.PID, syscall.SIGCONT) })
	t.Cleanup(cont)
	err = h.prompt(s, "m1", "this must not be submitted")
	if err == nil || !errors.Is(err, ErrKeyboard) {
		t.Fatalf("Prompt to a stopped agent: got %v, want %v", err, ErrKeyboard)
	}
	cont()
	// The pty delivers in order: a send that works now comes after anything
	// the stopped agent had pending.
	if err := h.prompt(s, "m2", "hello"); err != nil {
		t.Fatalf("Prompt after SIGCONT: got %v, want nil", err)
	}
	waitTurns(t, k, 1)
	if got, want := h.personTexts(), []string{"hello"}; !slices.Equal(got, want) {
		t.Errorf("model got %q, want %q", got, want)
	}
}

// 8: the pane is a bare shell: refused, nothing typed.
func TestPromptRefusesShell(t *testing.T) {
	h := newHarness(t, scenario())
	ctx := context.Background()
	if err := h.c.NewSession(ctx, ctl.NewSessionOptions{Name: "shell", Cwd: h.cwd, Argv: []string{"bash", "--norc", "--noprofile", "-i"}}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, func() bool {
		info, err := h.c.Pane(ctx, "shell")
		return err == nil && info.CurrentCommand == "bash"
	}, "bash never started")
	spec := h.spec("t8")
	spec.Options[OptAdopt] = "shell"
	k := newSink()
	sess, err := h.drv.Start(ctx, spec, k)
	if err != nil {
		t.Fatalf("Start (adopt a shell): %v", err)
	}
	t.Cleanup(func() { _ = sess.Close(ctx) })
	before, _ := h.c.Capture(ctx, "shell", 0)
	err = sess.Prompt(ctx, driver.Prompt{MessageID: "m1", Text: "echo typed-into-a-shell"})
	if !errors.Is(err, ErrBareShell) {
		t.Fatalf("Prompt into a shell: got %v, want %v", err, ErrBareShell)
	}
	after, _ := h.c.Capture(ctx, "shell", 0)
	if strings.Contains(after, "typed-into-a-shell") || after != before {
		t.Errorf("the shell's pane changed: before %q after %q", before, after)
	}
}

// 9: a 5,000-character message with newlines is submitted and verified.
func TestPromptLongText(t *testing.T) {
	h := newHarness(t, scenario())
	s, k := h.start("t9")
	var b strings.Builder
	for i := 0; b.Len() < 5000; i++ {
		fmt.Fprintf(&b, "line %d of a long message, with words and numbers %d\n", i, i*7)
	}
	text := b.String()[:5000] + " END"
	if err := h.prompt(s, "m1", text); err != nil {
		t.Fatalf("Prompt: got %v, want nil", err)
	}
	waitTurns(t, k, 1)
	if got := lastPersonText(h); strings.TrimSpace(got) != strings.TrimSpace(text) {
		t.Errorf("model got %d chars ending %q, want %d chars ending %q", len(got), tailOf(got), len(text), tailOf(text))
	}
}

func tailOf(s string) string {
	if len(s) > 40 {
		return s[len(s)-40:]
	}
	return s
}

// 10: "yes" three times: each submitted only once really received; the same
// text pasted but never submitted is never counted as submitted.
func TestPromptRepeatedShortText(t *testing.T) {
	h := newHarness(t, scenario())
	s, k := h.start("t10")
	for i := 1; i <= 3; i++ {
		if err := h.prompt(s, fmt.Sprintf("m%d", i), "yes"); err != nil {
			t.Fatalf("send %d: got %v, want nil", i, err)
		}
		testkit.Eventually(t, 30*time.Second, func() bool { return countOf(h.personTexts(), "yes") == i },
			"send %d: the model never got the %d-th yes", i, i)
		waitTurns(t, k, i)
	}
	ctx := context.Background()
	before, err := s.capture(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.c.Paste(ctx, s.name, "test-paste", "yes"); err != nil {
		t.Fatal(err)
	}
	var after *pane.Screen
	testkit.Eventually(t, 10*time.Second, func() bool {
		after, err = s.capture(ctx)
		return err == nil && after.InBox("yes")
	}, "the pasted yes never showed in the box")
	if got, want := after.CountSubmitted("yes"), before.CountSubmitted("yes"); got != want {
		t.Errorf("a yes only staged in the box counted as submitted: got %d, want %d", got, want)
	}
	if got := countOf(h.personTexts(), "yes"); got != 3 {
		t.Errorf("model got %d yes, want 3", got)
	}
}

func countOf(xs []string, x string) int {
	n := 0
	for _, v := range xs {
		if strings.TrimSpace(v) == x {
			n++
		}
	}
	return n
}
