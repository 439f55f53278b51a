package tmux

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/tmux/ctl"
	"github.com/parleyhq/parley/internal/driver/tmux/pane"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

// The send's truth under faults (issue 11): each test drives the real Claude
// Code TUI in real tmux and checks the driver's verdict against what the
// stand-in model really got.

// modelGotTimes counts the model requests whose newest person text is text
// (each prompt starts exactly one request).
func (h *harness) modelGotTimes(text string) int {
	n := 0
	for _, r := range h.srv.ScenarioRequests() {
		if strings.TrimSpace(r.LastUserText()) == strings.TrimSpace(text) {
			n++
		}
	}
	return n
}

// inSideChannel reports whether text reached the model only folded into
// another turn (Claude Code's queue of messages typed while it worked).
func (h *harness) inSideChannel(text string) bool {
	for _, r := range h.srv.ScenarioRequests() {
		for _, m := range r.Messages {
			for _, c := range m.Content {
				if strings.Contains(c.Text, "while you were working") && strings.Contains(c.Text, text) ||
					c.Type == "tool_result" && strings.Contains(c.ResultText(), text) {
					return true
				}
			}
		}
	}
	return false
}

// typeByHand types into the pane as a person at the terminal.
func (h *harness) typeByHand(s *session, text string, enter bool) {
	h.t.Helper()
	ctx := context.Background()
	if err := h.c.SendLiteral(ctx, s.pane, text); err != nil {
		h.t.Fatal(err)
	}
	if enter {
		testkit.Eventually(h.t, 20*time.Second, func() bool {
			scr, err := s.captureVisible(ctx)
			return err == nil && scr.InBox(text)
		}, "%q typed by hand never showed in the box", text)
		if err := h.c.SendKeys(ctx, s.pane, "Enter"); err != nil {
			h.t.Fatal(err)
		}
	}
}

// Item 2: a message sent while the agent works on a turn (one a person typed
// at the terminal) is not typed into Claude Code's own queue: it waits,
// reported queued, and goes as a prompt of its own once the turn is over.
// The end of the turn typed by hand is not reported as the message's (the
// soak's busy and menu faults: its turn ended the moment it was submitted,
// and the agent killed next never sent it to the model).
func TestPromptWaitsWhileAgentWorks(t *testing.T) {
	h := newHarness(t, scenario())
	s, k := h.start("t-busy")
	var mu sync.Mutex
	var gotAtEnd []int // at each turn end reported, how many times the model had hello
	k.onTurnEnded(func() {
		n := h.modelGotTimes("hello")
		mu.Lock()
		gotAtEnd = append(gotAtEnd, n)
		mu.Unlock()
	})
	h.typeByHand(s, "slow", true)
	testkit.Eventually(t, 30*time.Second, func() bool {
		scr, err := s.captureVisible(context.Background())
		return err == nil && scr.Working()
	}, "the hand-typed turn never showed as working")
	if err := h.prompt(s, "m1", "hello"); err != nil {
		t.Fatalf("Prompt: got %v, want nil", err)
	}
	testkit.Eventually(t, 60*time.Second, func() bool { return h.modelGotTimes("hello") == 1 },
		"the model never got hello as a prompt of its own; requests' last texts: %q", h.personTexts())
	waitTurns(t, k, 1)
	mu.Lock()
	if !slices.Equal(gotAtEnd, []int{1}) {
		t.Errorf("turn ends reported while the send was in flight: at each, the model had hello %v times, want [1] (only hello's own turn)", gotAtEnd)
	}
	mu.Unlock()
	if strings.Contains(transcriptsIn(h.home), `"operation":"enqueue"`) {
		t.Errorf("parley typed into Claude Code's own queue (the transcript has an enqueue)")
	}
	if h.inSideChannel("hello") {
		t.Errorf("hello reached the model through Claude Code's queue (typed while it worked)")
	}
	if got := h.modelGotTimes("hello"); got != 1 {
		t.Errorf("the model got hello %d times, want 1", got)
	}
	queued := false
	for _, d := range k.deliveries() {
		queued = queued || d.MessageID == "m1" && d.State == chat.DeliveryQueued && strings.Contains(d.Detail, "working")
	}
	if !queued {
		t.Errorf("no queued receipt saying the agent is working: %+v", k.deliveries())
	}
}

// Item 9: a full redraw just before a send (the window resized, the agent
// stopped and resumed) must not hide a submission that happened: the same
// short text, sent again and again right after redraws, reaches the model
// once per send.
func TestPromptAfterRedraw(t *testing.T) {
	h := newHarness(t, scenario())
	s, k, agent := h.startWrapped("t-redraw")
	ctx := context.Background()
	const n = 6
	for i := 1; i <= n; i++ {
		if i%2 == 0 {
			_, _ = h.c.Run(ctx, "resize-window", "-t", s.pane, "-x", fmt.Sprint(100+i*7), "-y", fmt.Sprint(30+i))
		} else {
			_ = syscall.Kill(agent, syscall.SIGSTOP)
			time.Sleep(50 * time.Millisecond)
			_ = syscall.Kill(agent, syscall.SIGCONT)
		}
		if err := h.prompt(s, fmt.Sprintf("m%d", i), "yes"); err != nil {
			t.Fatalf("send %d: got %v, want nil", i, err)
		}
		waitTurns(t, k, i)
		if got := h.modelGotTimes("yes"); got != i {
			t.Fatalf("after send %d the model got yes %d times, want %d\n%s", i, got, i, plain(h.capture(s)))
		}
	}
}

// Items 4 and 3: a 5,000-character paste to an agent that has stopped reading
// fails, and is taken back for good: once the agent runs again, the next
// message reaches the model alone, not glued to the failed one.
func TestPromptLongTextToStoppedAgent(t *testing.T) {
	h := newHarness(t, scenario())
	s, k, agent := h.startWrapped("t-long-stopped")
	var b strings.Builder
	for i := 0; b.Len() < 5000; i++ {
		fmt.Fprintf(&b, "line %d of a long message that must not go out %d\n", i, i*7)
	}
	long := b.String()
	cont := stopAgent(t, agent)
	err := h.prompt(s, "m1", long)
	if err == nil || !errors.Is(err, ErrKeyboard) {
		t.Fatalf("a long paste to a stopped agent: got %v, want %v", err, ErrKeyboard)
	}
	cont()
	if err := h.prompt(s, "m2", "hello"); err != nil {
		t.Fatalf("Prompt after SIGCONT: got %v, want nil", err)
	}
	waitTurns(t, k, 1)
	if got := h.personTexts(); len(got) != 1 || got[0] != "hello" {
		t.Fatalf("model got %d texts %q…, want only hello", len(got), tailOf(strings.Join(got, "|")))
	}
}

// Item 3: the agent stops (SIGSTOP) just as Enter is pressed. Whatever the
// send answers must be true once the agent runs again: submitted only if the
// model got it, failed only if it never does; an unverified end (the send
// was stopped) says it is not known.
func TestPromptAgentStopsAtEnter(t *testing.T) {
	h := newHarness(t, scenario())
	s, _, agent := h.startWrapped("t-stop-enter")
	for i := 1; i <= 3; i++ {
		text := fmt.Sprintf("frozen at enter %d", i)
		var once sync.Once
		stopped := make(chan struct{})
		go func() {
			// Stop the agent as soon as the text shows in the box: Enter
			// comes right after.
			defer once.Do(func() { close(stopped) })
			for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
				scr, err := s.captureVisible(context.Background())
				if err == nil && scr.InBox(text) {
					once.Do(func() { _ = syscall.Kill(agent, syscall.SIGSTOP); close(stopped) })
					return
				}
				time.Sleep(time.Millisecond)
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 12*time.Second)
		err := s.Prompt(ctx, driver.Prompt{MessageID: fmt.Sprint("m", i), Text: text})
		cancel()
		<-stopped
		_ = syscall.Kill(agent, syscall.SIGCONT)
		// Give the agent time to act on what it was sent.
		if err != nil && !errors.Is(err, driver.ErrUnverified) {
			time.Sleep(5 * time.Second)
		} else {
			testkit.Eventually(t, 30*time.Second, func() bool { return h.modelGotTimes(text) > 0 }, "")
		}
		got := h.modelGotTimes(text)
		switch {
		case err == nil && got != 1:
			t.Fatalf("send %d: submitted, but the model got it %d times", i, got)
		case err != nil && !errors.Is(err, driver.ErrUnverified) && got != 0:
			t.Fatalf("send %d: failed (%v), but the model got it %d times", i, err, got)
		case errors.Is(err, driver.ErrUnverified) && got > 1:
			t.Fatalf("send %d: unverified, and the model got it %d times", i, got)
		}
		t.Logf("send %d: %v; the model got it %d times", i, err, got)
		testkit.Eventually(t, 60*time.Second, func() bool {
			scr, err := s.captureVisible(context.Background())
			return err == nil && scr.HasBox() && !scr.Working()
		}, "the agent never came back to its box")
	}
}

// Item 5: typing at the terminal during a send never makes the message's
// words reach the model twice, and a failed send never reaches it. (Typing
// that lands in the instant between parley's last look at the box and its
// Enter goes out with the message: it reached the agent once, as submitted
// says.)
func TestPromptJunkDuringSend(t *testing.T) {
	h := newHarness(t, scenario())
	s, k := h.start("t-junk")
	turns := 0
	for i := 1; i <= 4; i++ {
		text := fmt.Sprintf("message %d with junk typed around it", i)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for j := 0; j < 4; j++ {
				time.Sleep(time.Duration(40+j*90) * time.Millisecond)
				_ = h.c.SendLiteral(context.Background(), s.pane, fmt.Sprintf("zzjunk%d", j))
			}
		}()
		err := h.prompt(s, fmt.Sprint("m", i), text)
		<-done
		if err != nil {
			if errors.Is(err, driver.ErrUnverified) {
				t.Fatalf("send %d: %v", i, err)
			}
			t.Logf("send %d failed: %v", i, err)
		} else {
			turns++
			waitTurns(t, k, turns)
		}
		time.Sleep(2 * time.Second) // a late copy would arrive now
		want := 1
		if err != nil {
			want = 0
		}
		got := 0
		for _, p := range h.personTexts() {
			if strings.Contains(p, text) {
				got++
			}
		}
		if got != want {
			t.Fatalf("send %d (%v): the model got it %d times, want %d; texts %q", i, err, got, want, h.personTexts())
		}
	}
}

// Typing that lands in the box after the send's last look and before its
// Enter is submitted glued to the message. Before the agent's first hook is
// heard (its SessionStart can come after its box shows, on a loaded machine)
// the send is still proven by the UserPromptSubmit hook reporting the glued
// prompt: not left "unknown" (it reached the agent, junk and all).
func TestPromptGluedBeforeFirstHookIsProven(t *testing.T) {
	h := newHarness(t, scenario())
	s, k := h.start("t-glued")
	testkit.Eventually(t, 30*time.Second, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.hooksWork
	}, "no hook was heard from the agent")
	s.mu.Lock()
	s.hooksWork = false // as before its SessionStart hook arrives
	s.mu.Unlock()
	s.beforeEnter = func() {
		s.beforeEnter = nil
		ctx := context.Background()
		if err := h.c.SendLiteral(ctx, s.pane, "zzjunk"); err != nil {
			t.Errorf("typing junk: %v", err)
			return
		}
		testkit.Eventually(t, 20*time.Second, func() bool {
			scr, err := s.captureVisible(ctx)
			return err == nil && strings.Contains(scr.Staged(), "zzjunk")
		}, "the junk never showed in the box")
	}
	const text = "a message glued to late typing"
	if err := h.prompt(s, "m1", text); err != nil {
		t.Fatalf("Prompt: got %v, want nil (the hook reported the glued prompt)", err)
	}
	waitTurns(t, k, 1)
	got := h.personTexts()
	if len(got) != 1 || !strings.Contains(got[0], text) || !strings.Contains(got[0], "zzjunk") {
		t.Fatalf("the model got %q, want the message glued to the junk, once", got)
	}
}

// Item 4: the agent is stopped during sends and resumes (its whole screen
// drawn again, which can leave it garbled); someone types into its box: the
// next send proves the box empty first, and its message reaches the model
// alone.
func TestPromptAfterStoppedAgentClearsTheBox(t *testing.T) {
	h := newHarness(t, scenario())
	s, k, agent := h.startWrapped("t-stopped-then-typed")
	cont := stopAgent(t, agent)
	if err := h.prompt(s, "m1", "not to be sent"); err == nil || !errors.Is(err, ErrKeyboard) {
		t.Fatalf("a send to a stopped agent: got %v, want %v", err, ErrKeyboard)
	}
	cont()
	// Stopped again, and resumed while a send waits for its paste to show.
	cont = stopAgent(t, agent)
	go func() { time.Sleep(1500 * time.Millisecond); cont() }()
	turns := 0
	if err := h.prompt(s, "m2", "sent across a stop"); err == nil {
		turns++
		waitTurns(t, k, turns)
	} else if !errors.Is(err, ErrKeyboard) {
		t.Fatalf("a send across a stop: got %v, want nil or %v", err, ErrKeyboard)
	}
	h.typeByHand(s, "zzjunk typed by hand", false)
	testkit.Eventually(t, 20*time.Second, func() bool {
		scr, err := s.captureVisible(context.Background())
		return err == nil && scr.Staged() != ""
	}, "the typing never showed in the box")
	if err := h.prompt(s, "m3", "hello"); err != nil {
		t.Fatalf("Prompt: got %v, want nil\n%s", err, plain(h.capture(s)))
	}
	turns++
	waitTurns(t, k, turns)
	if got := h.personTexts(); got[len(got)-1] != "hello" || h.modelGotTimes("not to be sent") != 0 || len(got) != turns {
		t.Fatalf("model got %q, want hello last and only what was submitted", got)
	}
}

// Item 4: text left in the box with the cursor moved to its start (a person
// pressed Home, or Up in a long input) is still cleared: the send proves the
// box empty and its message reaches the model alone.
func TestPromptClearsTextBeforeTheCursor(t *testing.T) {
	h := newHarness(t, scenario())
	s, k := h.start("t-cursor")
	h.typeByHand(s, "zzjunk left of nothing", false)
	testkit.Eventually(t, 20*time.Second, func() bool {
		scr, err := s.captureVisible(context.Background())
		return err == nil && scr.Staged() != ""
	}, "the typing never showed in the box")
	if err := h.c.SendKeys(context.Background(), s.pane, "Home"); err != nil {
		t.Fatal(err)
	}
	if err := h.prompt(s, "m1", "hello"); err != nil {
		t.Fatalf("Prompt: got %v, want nil\n%s", err, plain(h.capture(s)))
	}
	waitTurns(t, k, 1)
	if got := h.personTexts(); len(got) != 1 || got[0] != "hello" {
		t.Fatalf("model got %q, want only hello", got)
	}
}

// Items 3 and 4 (the soak's frozen agent): a send to a stopped agent types
// nothing, so nothing of it waits unread in the terminal to land when the
// agent goes on. Sent the instant it continues, the next message reaches the
// model alone; the failed ones (short and a 5,000-character paste) never do.
func TestPromptToStoppedAgentTypesNothing(t *testing.T) {
	h := newHarness(t, scenario())
	s, k, agent := h.startWrapped("t-stopped-nothing")
	var b strings.Builder
	for i := 0; b.Len() < 5000; i++ {
		fmt.Fprintf(&b, "line %d of a long message to a stopped agent %d\n", i, i*7)
	}
	failed := []string{"short message to a stopped agent", b.String(), "another message to a stopped agent"}
	var want []string
	for i, text := range failed {
		cont := stopAgent(t, agent)
		err := h.prompt(s, fmt.Sprint("f", i), text)
		cont()
		if !errors.Is(err, ErrKeyboard) {
			t.Fatalf("send %d to a stopped agent: got %v, want %v", i, err, ErrKeyboard)
		}
		next := fmt.Sprintf("hello %d", i)
		if err := h.prompt(s, fmt.Sprint("m", i), next); err != nil {
			t.Fatalf("the send right after SIGCONT: got %v, want nil\n%s", err, plain(h.capture(s)))
		}
		want = append(want, next)
		waitTurns(t, k, len(want))
		if got := h.personTexts(); !slices.Equal(got, want) {
			t.Fatalf("send %d: the model got %q, want %q\n%s", i, tailOf(strings.Join(got, "|")), want, plain(h.capture(s)))
		}
	}
}

// A stopped agent (SIGSTOP) is seen in /proc before anything is typed: the
// send fails at once, saying so, however long the driver would wait for a
// step, and nothing of it reaches the model once the agent goes on. (It used
// to wait a step for the agent to continue: with a long step, the person
// waited that long for the same failure.)
func TestPromptStoppedAgentFailsAtOnce(t *testing.T) {
	h := newHarness(t, scenario())
	h.drv.StepTimeout = time.Hour
	s, k, agent := h.startWrapped("t-stop-at-once")
	cont := stopAgent(t, agent)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := s.Prompt(ctx, driver.Prompt{MessageID: "m1", Text: "not for a stopped agent"})
	if !errors.Is(err, ErrStopped) {
		t.Fatalf("a send to a stopped agent: got %v, want %v", err, ErrStopped)
	}
	if !strings.Contains(err.Error(), "nothing was typed") {
		t.Errorf("the failure %q does not say that nothing was typed", err)
	}
	cont()
	if err := h.prompt(s, "m2", "hello"); err != nil {
		t.Fatalf("Prompt after SIGCONT: got %v, want nil\n%s", err, plain(h.capture(s)))
	}
	waitTurns(t, k, 1)
	if got := h.personTexts(); !slices.Equal(got, []string{"hello"}) {
		t.Fatalf("the model got %q, want [hello]", got)
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
	k.mu.Lock()
	ids := slices.Clone(k.ids)
	k.mu.Unlock()
	if len(ids) == 0 || ids[0] == "" {
		t.Errorf("session ids %q, want Claude Code's (from the SessionStart hook)", ids)
	}
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
	s, k, agent := h.startWrapped("t7")
	cont := stopAgent(t, agent)
	err := h.prompt(s, "m1", "this must not be submitted")
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
		t.Errorf("model got %q, want %q\n%s", got, want, plain(h.capture(s)))
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

// A session's calls name its own pane: once "foo" is gone, a send or an
// interrupt fails as gone and never lands in "foobar" (a bare -t foo would
// match it by prefix).
func TestGoneSessionIsNotAnother(t *testing.T) {
	h := newHarness(t, scenario())
	ctx := context.Background()
	for _, n := range []string{"foo", "foobar"} {
		if err := h.c.NewSession(ctx, ctl.NewSessionOptions{Name: n, Cwd: h.cwd, Argv: []string{"cat", "-v"}}); err != nil {
			t.Fatal(err)
		}
	}
	spec := h.spec("t-exact")
	spec.Options[OptAdopt] = "foo"
	k := newSink()
	sess, err := h.drv.Start(ctx, spec, k)
	if err != nil {
		t.Fatalf("Start (adopt foo): %v", err)
	}
	t.Cleanup(func() { _ = sess.Close(ctx) })
	if err := h.c.KillSession(ctx, "foo"); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, func() bool {
		k.mu.Lock()
		defer k.mu.Unlock()
		return len(k.exited) == 1
	}, "Exited never reported for foo")
	before, err := h.c.Capture(ctx, ctl.SessionTarget("foobar"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Cancel(ctx); !errors.Is(err, ErrGone) {
		t.Errorf("Cancel with foo gone: got %v, want %v", err, ErrGone)
	}
	if err := sess.Prompt(ctx, driver.Prompt{MessageID: "m1", Text: "meant for foo"}); !errors.Is(err, ErrGone) || !errors.Is(err, driver.ErrNotRunning) {
		t.Errorf("Prompt with foo gone: got %v, want %v", err, ErrGone)
	}
	s := sess.(*session)
	if _, err := s.captureVisible(ctx); !errors.Is(err, ErrGone) {
		t.Errorf("reading foo's pane with foo gone: got %v, want %v", err, ErrGone)
	}
	after, err := h.c.Capture(ctx, ctl.SessionTarget("foobar"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("foobar's pane changed by what was meant for foo:\nbefore %q\nafter  %q", before, after)
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
// text pasted but never submitted is never reported (nor counted) as
// submitted: a fourth "yes" pasted into the box of an agent that no longer
// reads its input fails, though "yes" stands above the box three times.
func TestPromptRepeatedShortText(t *testing.T) {
	h := newHarness(t, scenario())
	s, k, agent := h.startWrapped("t10")
	for i := 1; i <= 3; i++ {
		if err := h.prompt(s, fmt.Sprintf("m%d", i), "yes"); err != nil {
			t.Fatalf("send %d: got %v, want nil", i, err)
		}
		testkit.Eventually(t, 30*time.Second, func() bool { return countOf(h.personTexts(), "yes") == i },
			"send %d: the model never got the %d-th yes", i, i)
		waitTurns(t, k, i)
	}
	cont := stopAgent(t, agent)
	if err := h.prompt(s, "m4", "yes"); err == nil || !errors.Is(err, ErrKeyboard) {
		t.Fatalf("a fourth yes to a stopped agent: got %v, want %v (never submitted)", err, ErrKeyboard)
	}
	cont()
	// The pty delivers in order: a send that works now comes after the
	// stopped agent's pending input (the paste and the keys taking it back).
	if err := h.prompt(s, "m5", "hello"); err != nil {
		t.Fatalf("Prompt after SIGCONT: got %v, want nil", err)
	}
	waitTurns(t, k, 4)
	if got, want := h.personTexts(), []string{"yes", "yes", "yes", "hello"}; !slices.Equal(got, want) {
		t.Fatalf("model got %q, want %q\n%s", got, want, plain(h.capture(s)))
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

// Cancel interrupts a turn in flight: the turn ends as cancelled.
func TestCancel(t *testing.T) {
	h := newHarness(t, scenario())
	s, k := h.start("t-cancel")
	if err := h.prompt(s, "m1", "slow"); err != nil {
		t.Fatalf("Prompt: %v", err)
	}
	testkit.Eventually(t, 30*time.Second, func() bool { return h.modelGot("slow") }, "the model never got the message")
	if err := s.Cancel(context.Background()); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	testkit.Eventually(t, 10*time.Second, func() bool {
		k.mu.Lock()
		defer k.mu.Unlock()
		return len(k.turns) == 1 && k.turns[0] == chat.StopCancelled
	}, "the turn did not end as cancelled")
	// Claude Code shows "Interrupted" under the turn, or, when the interrupt
	// came before its answer began, takes the message back into the input box.
	if !testkit.Within(20*time.Second, func() bool {
		scr, err := s.captureVisible(context.Background())
		return err == nil && (strings.Contains(strings.Join(scr.Lines, "\n"), "Interrupted") || scr.Staged() == "slow")
	}) {
		t.Fatalf("the TUI shows neither the interrupt nor the message taken back:\n%s", plain(h.capture(s)))
	}
	// Either way the next message goes alone: text left in the box is cleared
	// before typing, so the model gets "hello", not "slowhello".
	if err := h.prompt(s, "m2", "hello"); err != nil {
		t.Fatalf("Prompt after the cancel: %v\n%s", err, plain(h.capture(s)))
	}
	if !testkit.Within(30*time.Second, func() bool {
		reqs := h.srv.ScenarioRequests()
		return len(reqs) > 0 && reqs[len(reqs)-1].LastUserText() == "hello"
	}) {
		t.Fatalf("the model's last request after the cancel does not end with \"hello\" alone: %s\n%s", bodiesWith(h, "hello"), plain(h.capture(s)))
	}
	waitTurns(t, k, 2)
}

// A send's text reaches the agent exactly as written, tmux formats and all,
// whichever way it is loaded: from the session's own file through the
// control client (a plain state folder; the file is gone after), or by a
// tmux process on stdin where the folder's path holds characters tmux would
// expand in a load-buffer path.
func TestPasteLoadsTheTextAsWritten(t *testing.T) {
	const text = "keep #{session_name} and #(touch pwned) as typed"
	sc := claudeapi.Scenario{Rules: []claudeapi.Rule{{Match: claudeapi.Match{Prefix: "keep"}, Reply: claudeapi.Text("Kept.", 1, 0)}}}
	for _, c := range []struct{ name, folder string }{{"plain folder", ""}, {"a folder tmux would expand", "a #{pane_id} b"}} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, sc)
			if c.folder != "" {
				h.drv.StateDir = filepath.Join(h.drv.StateDir, c.folder)
			}
			s, _ := h.start("t-paste")
			if got := plainPath.MatchString(filepath.Join(s.dir, "paste")); got != (c.folder == "") {
				t.Fatalf("the paste file's path plain: %v, want %v", got, c.folder == "")
			}
			if err := h.prompt(s, "m1", text); err != nil {
				t.Fatalf("Prompt: %v", err)
			}
			testkit.Eventually(t, 60*time.Second, func() bool { return h.modelGotTimes(text) == 1 },
				"the model never got the text as written; requests' last texts: %q", h.personTexts())
			if _, err := os.Stat(filepath.Join(s.dir, "paste")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the paste's file after the send: %v, want it gone", err)
			}
			if _, err := os.Stat(filepath.Join(h.cwd, "pwned")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a #(…) in the text ran: %v", err)
			}
		})
	}
}
