package tmux

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/tmux/ctl"
	"github.com/parleyhq/parley/internal/driver/tmux/pane"
	"github.com/parleyhq/parley/internal/testkit"
)

// A person's own tmux session running Claude Code is adopted by name and
// chatted with; Close lets it live on.
func TestAdoptExistingSession(t *testing.T) {
	h := newHarness(t, scenario())
	ctx := context.Background()
	if err := h.c.NewSession(ctx, ctl.NewSessionOptions{Name: "mine", Cwd: h.cwd, Env: h.env, Argv: []string{h.claud, "--model", "claude-sonnet-4-5"}}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 60*time.Second, func() bool {
		out, err := h.c.Capture(ctx, "mine", 0)
		return err == nil && pane.Read(out).HasBox()
	}, "the person's Claude Code never showed its input box")
	spec := h.spec("t-adopt")
	spec.Options[OptAdopt] = "mine"
	k := newSink()
	sess, err := h.drv.Start(ctx, spec, k)
	if err != nil {
		t.Fatalf("Start (adopt): %v", err)
	}
	if err := sess.Prompt(ctx, driver.Prompt{MessageID: "m1", Text: "hello"}); err != nil {
		t.Fatalf("Prompt: got %v, want nil", err)
	}
	testkit.Eventually(t, 30*time.Second, func() bool { return h.modelGot("hello") }, "the model never got the message")
	// No hooks in a person's session: the reply and the turn's end come from
	// the transcript that holds the prompt.
	testkit.Eventually(t, 90*time.Second, func() bool { return strings.Contains(k.text(), "Hello from the stand-in.") },
		"the reply never arrived from the adopted session's transcript")
	waitTurns(t, k, 1)
	if err := sess.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := h.c.HasSession(ctx, "mine"); err != nil || !ok {
		t.Errorf("the adopted session after Close: exists %v (%v), want it kept", ok, err)
	}
}

// TestAdoptOnTheirOwnServer: a Claude Code the person started on their own
// tmux server (not parley's) is adopted through the socket option, chatted
// with, left running on Close, and found by the debug command on that server.
func TestAdoptOnTheirOwnServer(t *testing.T) {
	h := newHarness(t, scenario())
	ctx := context.Background()
	theirs := "parley-test-own-" + randomName(t)
	c, err := ctl.New("", theirs, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killServer(t, c) })
	if err := c.NewSession(ctx, ctl.NewSessionOptions{Name: "work", Cwd: h.cwd, Env: h.env, Argv: []string{h.claud, "--model", "claude-sonnet-4-5"}}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 60*time.Second, func() bool {
		out, err := c.Capture(ctx, "work", 0)
		return err == nil && pane.Read(out).HasBox()
	}, "the person's Claude Code never showed its input box")
	spec := h.spec("t-theirs")
	spec.Options[OptAdopt] = "work"
	spec.Options[OptSocket] = theirs
	k := newSink()
	sess, err := h.drv.Start(ctx, spec, k)
	if err != nil {
		t.Fatalf("Start (adopt on their server): %v", err)
	}
	if err := sess.Prompt(ctx, driver.Prompt{MessageID: "m1", Text: "hello"}); err != nil {
		t.Fatalf("Prompt: got %v, want nil", err)
	}
	testkit.Eventually(t, 30*time.Second, func() bool { return h.modelGot("hello") }, "the model never got the message")
	waitTurns(t, k, 1)
	if ok, err := h.c.HasSession(ctx, "work"); err != nil || ok {
		t.Errorf("parley's own server has a session %q (%v): the adoption went to the wrong server", "work", err)
	}
	var out strings.Builder
	if err := DebugSocket(ctx, &out, theirs, "work", t.TempDir()); err != nil {
		t.Fatalf("debug on their server: %v", err)
	}
	if !strings.Contains(out.String(), "session:       work") {
		t.Errorf("debug output does not name the session:\n%s", out.String())
	}
	if err := sess.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.HasSession(ctx, "work"); err != nil || !ok {
		t.Errorf("their session after Close: exists %v (%v), want it kept", ok, err)
	}
}

func TestSessionName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id   chat.ThreadID
		want string
	}{
		{"t1", "parley-t1"},
		{"th_01J:abc.def", "parley-th_01J-abc-def"},
		{"../../etc;rm -rf", "parley-etc-rm--rf"},
	}
	for _, tt := range tests {
		if got := SessionName(tt.id); got != tt.want {
			t.Errorf("SessionName(%q): got %q, want %q", tt.id, got, tt.want)
		}
	}
	if got := SessionName("x-very-long-thread-identifier-that-goes-on-and-on-forever-and-on"); len(got) > 64 {
		t.Errorf("long id: %q is %d bytes, want ≤ 64", got, len(got))
	}
}
