package tmux

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"

	"github.com/parleyhq/parley/internal/chat"
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
			{Match: claudeapi.Match{Exact: "askmulti"}, Reply: claudeapi.ToolUse("AskUserQuestion", map[string]any{
				"questions": []map[string]any{{"question": "Which fruits do you like?", "header": "Fruit", "multiSelect": true,
					"options": []map[string]string{{"label": "Apple", "description": "Crisp"}, {"label": "Banana", "description": "Soft"}, {"label": "Cherry", "description": "Small"}}}}})},
			{Match: claudeapi.Match{Exact: "asktwo"}, Reply: claudeapi.ToolUse("AskUserQuestion", map[string]any{
				"questions": []map[string]any{
					{"question": "Which color do you prefer?", "header": "Color", "multiSelect": false,
						"options": []map[string]string{{"label": "Blue", "description": "The color of the sky"}, {"label": "Red", "description": "The color of fire"}}},
					{"question": "Which size?", "header": "Size", "multiSelect": false,
						"options": []map[string]string{{"label": "Small", "description": "S"}, {"label": "Large", "description": "L"}}}}})},
			{Match: claudeapi.Match{Exact: "slow"}, Reply: claudeapi.Text(strings.Repeat("word ", 400), 200, 50*time.Millisecond)},
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
	k.mu.Lock()
	ids := slices.Clone(k.ids)
	k.mu.Unlock()
	if len(ids) == 0 || ids[0] == "" {
		t.Errorf("session ids %q, want Claude Code's (from the SessionStart hook)", ids)
	}
}

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

// startWrapped starts Claude Code one process below the pane's own (see
// envTestWrap), so that it can be stopped, and returns its pid.
func (h *harness) startWrapped(thread string) (*session, *sink, int) {
	h.t.Helper()
	spec := h.spec(thread)
	spec.Command = os.Args[0]
	spec.Env = append(spec.Env, envTestWrap+"="+h.claud)
	k := newSink()
	ctx := context.Background()
	sess, err := h.drv.Start(ctx, spec, k)
	if err != nil {
		h.t.Fatalf("Start: %v", err)
	}
	h.t.Cleanup(func() { _ = sess.Close(ctx) })
	s := sess.(*session)
	info, err := h.c.Pane(ctx, s.pane)
	if err != nil {
		h.t.Fatal(err)
	}
	// The wrapper is a Go program: any of its threads may have forked the
	// agent, and each thread lists only its own children.
	var kids []string
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", info.PID))
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		kids = append(kids, strings.Fields(string(b))...)
	}
	if len(kids) != 1 {
		h.t.Fatalf("the wrapper (pid %d) has children %v, want the one agent", info.PID, kids)
	}
	agent, err := strconv.Atoi(kids[0])
	if err != nil {
		h.t.Fatalf("agent pid from %q: %v", kids, err)
	}
	// The agent is out of the pane's reach (its own process group), so the
	// tmux server going away does not end it: end it here, before the test's
	// folders are removed under its feet.
	h.t.Cleanup(func() {
		_ = syscall.Kill(agent, syscall.SIGKILL)
		_ = syscall.Kill(agent, syscall.SIGCONT)
		if !poll(10*time.Second, func() bool { return syscall.Kill(agent, 0) != nil }) {
			h.t.Logf("agent %d still there 10 s after SIGKILL", agent)
		}
	})
	return s, k, agent
}

// stopAgent stops the agent with SIGSTOP (nothing renders any more) and
// returns the function that lets it run again (also called at cleanup).
func stopAgent(t *testing.T, agent int) func() {
	t.Helper()
	if err := syscall.Kill(agent, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, func() bool {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", agent))
		f := strings.Fields(string(b))
		return len(f) > 2 && f[2] == "T"
	}, "the agent never stopped")
	cont := sync.OnceFunc(func() { _ = syscall.Kill(agent, syscall.SIGCONT) })
	t.Cleanup(cont)
	return cont
}

func plain(capture string) string { return strings.Join(pane.Read(capture).Full, "\n") }

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

func answerCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// 4: a Bash permission menu becomes a card; a message sent meanwhile waits as
// queued and goes once the card is answered; the answer really ran the tool.
func TestPermissionCardQueuesMessage(t *testing.T) {
	h := newHarness(t, scenario())
	s, k := h.start("t4")
	if err := h.prompt(s, "m1", "run it"); err != nil {
		t.Fatalf("Prompt: %v", err)
	}
	testkit.Eventually(t, 30*time.Second, func() bool { return len(k.permissions()) == 1 }, "no permission card")
	card := k.permissions()[0]
	ids := h.srv.ToolUseIDs("Bash")
	if len(ids) != 1 || card.RequestID != ids[0] || card.Tool.Name != "Bash" {
		t.Fatalf("card %+v, want request id %v (the tool use) and tool Bash", card, ids)
	}
	if got := len(card.Options); got != 3 || card.Options[0].Kind != chat.OptionAllowOnce || card.Options[2].Kind != chat.OptionRejectOnce {
		t.Fatalf("card options %+v, want Yes / Yes, and … / No", card.Options)
	}
	// parley debug pane sees the same menu through the same reader.
	var dbg strings.Builder
	if err := DebugSocket(context.Background(), &dbg, h.c.Socket(), s.name, t.TempDir()); err != nil {
		t.Fatalf("DebugSocket: %v", err)
	}
	for _, want := range []string{"live menu:     permission \"Bash command\" — Do you want to proceed?", "❯ 1. Yes", "input box:     not on the pane", "raw capture:"} {
		if !strings.Contains(dbg.String(), want) {
			t.Errorf("debug output lacks %q:\n%s", want, dbg.String())
		}
	}
	sent := make(chan error, 1)
	go func() { sent <- h.prompt(s, "m2", "hello") }()
	testkit.Eventually(t, 10*time.Second, func() bool {
		d := k.deliveries()
		return len(d) == 1 && d[0].MessageID == "m2" && d[0].State == chat.DeliveryQueued && d[0].Detail == "a permission menu is open"
	}, "no queued receipt for the message sent behind the menu: %+v", k.deliveries())
	select {
	case err := <-sent:
		t.Fatalf("Prompt behind a live menu returned %v before the card was answered", err)
	default:
	}
	if err := s.AnswerPermission(answerCtx(t), card.RequestID, driver.PermissionAnswer{OptionID: "1"}); err != nil {
		t.Fatalf("AnswerPermission: %v", err)
	}
	if err := <-sent; err != nil {
		t.Fatalf("queued Prompt after the answer: got %v, want nil", err)
	}
	testkit.Eventually(t, 30*time.Second, func() bool { _, ok := h.srv.ToolResult(card.RequestID); return ok }, "the stand-in never got the Bash tool result")
	if res, _ := h.srv.ToolResult(card.RequestID); res.IsError {
		t.Errorf("tool result is an error: %q", res.ResultText())
	}
	if _, err := os.Stat(filepath.Join(h.cwd, "made-by-bash")); err != nil {
		t.Errorf("the Bash command did not run: %v", err)
	}
	if !poll(30*time.Second, func() bool { return h.modelGot("hello") }) {
		t.Fatalf("the queued message never reached the model: %s\n%s", bodiesWith(h, "hello"), plain(h.capture(s)))
	}
	// Claude Code folds a message typed mid-turn into that turn: one turn in all.
	waitTurns(t, k, 1)
	if got := len(k.permissions()); got != 1 {
		t.Errorf("permission cards: got %d, want 1 (an answered card never comes back)", got)
	}
	if err := s.AnswerPermission(answerCtx(t), card.RequestID, driver.PermissionAnswer{OptionID: "1"}); !errors.Is(err, driver.ErrUnknownCard) {
		t.Errorf("answering twice: got %v, want %v", err, driver.ErrUnknownCard)
	}
}

// 5: an AskUserQuestion picker answered with a label and with free text; after
// a daemon restart (a new driver session on the same tmux pane, the old one
// never closed) or an adoption of that pane, no answered card is open again.
func TestQuestionCardAnswers(t *testing.T) {
	h := newHarness(t, scenario())
	s, k := h.start("t5")
	const q = "Which color do you prefer?"
	tests := []struct {
		prompt   string
		question string
		options  []string
		multi    bool
		answer   chat.Answer
		want     string
	}{
		{prompt: "ask", question: q, options: []string{"Blue", "Red"}, answer: chat.Answer{Text: "Blue"}, want: `"Which color do you prefer?"="Blue"`},
		{prompt: "ask", question: q, options: []string{"Blue", "Red"}, answer: chat.Answer{Text: "Green please"}, want: `"Which color do you prefer?"="Green please"`},
		{prompt: "askmulti", question: "Which fruits do you like?", options: []string{"Apple", "Banana", "Cherry"}, multi: true,
			answer: chat.Answer{Labels: []string{"Apple", "Cherry"}}, want: `"Which fruits do you like?"="Apple, Cherry"`},
	}
	for i, tt := range tests {
		if err := h.prompt(s, fmt.Sprintf("m%d", i), tt.prompt); err != nil {
			t.Fatalf("Prompt: %v", err)
		}
		testkit.Eventually(t, 30*time.Second, func() bool { return len(k.questions()) == i+1 }, "no question card %d", i+1)
		card := k.questions()[i]
		var labels []string
		if len(card.Questions) == 1 {
			for _, o := range card.Questions[0].Options {
				labels = append(labels, o.Label)
			}
		}
		if len(card.Questions) != 1 || card.Questions[0].Question != tt.question || card.Questions[0].MultiSelect != tt.multi || !slices.Equal(labels, tt.options) {
			t.Fatalf("card %+v, want %q (multi %v) with %q", card, tt.question, tt.multi, tt.options)
		}
		if err := s.AnswerQuestion(answerCtx(t), card.RequestID, driver.QuestionAnswer{Answers: chat.Answers{tt.question: tt.answer}}); err != nil {
			t.Fatalf("AnswerQuestion(%v): %v", tt.answer, err)
		}
		testkit.Eventually(t, 30*time.Second, func() bool { _, ok := h.srv.ToolResult(card.RequestID); return ok },
			"the stand-in never got the answer %q", tt.answer)
		if res, _ := h.srv.ToolResult(card.RequestID); !strings.Contains(res.ResultText(), tt.want) {
			t.Errorf("tool result %q, want it to contain %q", res.ResultText(), tt.want)
		}
		waitTurns(t, k, i+1)
	}
	// The daemon restarts: the old one never closes its session (it died), and
	// the new one starts the thread again on the same tmux session and pane,
	// or a person adopts that session by name. Neither shows an answered card.
	answered := k.questions()
	restart := h.spec("t5")
	adopt := h.spec("t5-adopt")
	adopt.Options[OptAdopt] = s.name
	for _, tc := range []struct {
		name string
		spec driver.Spec
	}{{"restart", restart}, {"adopt", adopt}} {
		k2 := newSink()
		sess2, err := h.drv.Start(context.Background(), tc.spec, k2)
		if err != nil {
			t.Fatalf("%s: Start: %v", tc.name, err)
		}
		t.Cleanup(func() { _ = sess2.Close(context.Background()) })
		s2 := sess2.(*session)
		if !s2.adopted || s2.pane != s.pane {
			t.Fatalf("%s: started on pane %s (adopted %v), want the existing pane %s", tc.name, s2.pane, s2.adopted, s.pane)
		}
		s2.scan()
		if got := k2.questions(); len(got) != 0 {
			t.Errorf("%s: question cards %+v, want none open", tc.name, got)
		}
		if got := k2.turnCount(); got != 0 {
			t.Errorf("%s: %d turns ended, want 0 (old hook events end no turn)", tc.name, got)
		}
		for _, c := range answered {
			if err := s2.AnswerQuestion(answerCtx(t), c.RequestID, driver.QuestionAnswer{Answers: chat.Answers{q: {Text: "Red"}}}); !errors.Is(err, driver.ErrUnknownCard) {
				t.Errorf("%s: answering old card %s: got %v, want %v", tc.name, c.RequestID, err, driver.ErrUnknownCard)
			}
		}
		if tc.name != "restart" {
			continue
		}
		// The restarted session works on, with the answered pickers in its
		// scrollback: its next turn shows no card either.
		if err := h.prompt(s2, "m-after", "hello"); err != nil {
			t.Fatalf("%s: Prompt: %v", tc.name, err)
		}
		waitTurns(t, k2, 1)
		testkit.Eventually(t, 30*time.Second, func() bool { return strings.Contains(k2.text(), "Hello from the stand-in.") },
			"%s: the reply never arrived from the transcript; got %q", tc.name, k2.text())
		if !poll(20*time.Second, func() bool {
			scr, err := s2.captureVisible(context.Background())
			return err == nil && strings.Contains(strings.Join(scr.Lines, "\n"), "Hello from the stand-in.")
		}) {
			t.Fatalf("%s: the reply never showed on the pane\n%s", tc.name, plain(h.capture(s2)))
		}
		s2.scan()
		if got := k2.questions(); len(got) != 0 {
			t.Errorf("%s: after a new turn: question cards %+v, want none", tc.name, got)
		}
	}
}

// 6: a menu that has scrolled up under later output is not a live card: here
// the model's own words look like a permission menu and are followed by more.
func TestMenuInHistoryIsNotACard(t *testing.T) {
	sc := scenario()
	sc.Rules = append([]claudeapi.Rule{{Match: claudeapi.Match{Exact: "fake menu"},
		Reply: claudeapi.Text("Bash command\n\nDo you want to proceed?\n❯ 1. Yes\n2. No\n", 1, 0)}}, sc.Rules...)
	h := newHarness(t, sc)
	s, k := h.start("t6")
	if err := h.prompt(s, "m1", "fake menu"); err != nil {
		t.Fatalf("Prompt: %v", err)
	}
	waitTurns(t, k, 1)
	// The Stop hook can run before the TUI draws the reply: wait for the screen.
	var scr *pane.Screen
	if !poll(20*time.Second, func() bool {
		var err error
		scr, err = s.capture(context.Background())
		return err == nil && strings.Contains(strings.Join(scr.Lines, "\n"), "1. Yes") && scr.LastSpeaker() == pane.SpeakerStatus
	}) {
		t.Fatalf("the fake menu and the turn's end are not on the pane:\n%s", plain(h.capture(s)))
	}
	s.scan()
	if m, live, why := scr.Menu(); live {
		t.Errorf("menu in history read as live: %+v\n%s", m, plain(h.capture(s)))
	} else {
		t.Logf("not live: %s", why)
	}
	if got := k.permissions(); len(got) != 0 {
		t.Errorf("permission cards %+v, want none", got)
	}
	// And a message goes through at once, not queued behind it.
	if err := h.prompt(s, "m2", "hello"); err != nil {
		t.Fatalf("Prompt after the fake menu: %v", err)
	}
	if d := k.deliveries(); len(d) != 0 {
		t.Errorf("receipts %+v, want none (nothing was queued)", d)
	}
}

func bodiesWith(h *harness, text string) string {
	var out []string
	for _, r := range h.srv.Requests() {
		out = append(out, fmt.Sprintf("%s %s %s rule=%d answered=%v last=%q", r.At.Format("15:04:05.000"), r.Kind, r.Path, r.Rule, r.Answered, r.LastUserText()))
		for _, m := range r.Messages {
			mb, _ := json.Marshal(m)
			if strings.Contains(string(mb), text) {
				out = append(out, r.Kind+" "+m.Role+": "+string(mb))
			}
		}
	}
	for _, d := range []string{h.drv.StateDir} {
		files, _ := filepath.Glob(filepath.Join(d, "*", "hooks.jsonl"))
		for _, f := range files {
			b, _ := os.ReadFile(f)
			for _, l := range strings.Split(string(b), "\n") {
				if i := strings.Index(l, "hook_event_name"); i >= 0 {
					out = append(out, "hook: "+l[i:min(len(l), i+60)])
				}
			}
		}
	}
	ps, _ := exec.Command("ps", "-eo", "pid,ppid,stat,etime,args").Output()
	for _, l := range strings.Split(string(ps), "\n") {
		if strings.Contains(l, "tmux.test") || strings.Contains(l, "claude") {
			out = append(out, "ps: "+l[:min(len(l), 200)])
		}
	}
	return strings.Join(out, "\n---\n")
}

// poll is Eventually for failures that need fresh details.
func poll(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// A remembered card never refuses a send on its own: the pane decides, and the
// stale card is withdrawn when the pane disagrees.
func TestStaleCardDoesNotBlock(t *testing.T) {
	h := newHarness(t, scenario())
	s, k := h.start("t-stale")
	s.mu.Lock()
	s.card = &openCard{id: "stale", kind: chat.CardPermission, menu: pane.Menu{Kind: pane.MenuPermission, Title: "Bash command"}}
	s.mu.Unlock()
	if err := h.prompt(s, "m1", "hello"); err != nil {
		t.Fatalf("Prompt with a stale card in memory: got %v, want nil", err)
	}
	if d := k.deliveries(); len(d) != 0 {
		t.Errorf("receipts %+v, want none (nothing to wait for)", d)
	}
	s.scan()
	k.mu.Lock()
	withdrawn := slices.Clone(k.withdrawn)
	k.mu.Unlock()
	if !slices.Contains(withdrawn, "stale") {
		t.Errorf("withdrawn %v, want the stale card", withdrawn)
	}
	waitTurns(t, k, 1)
}

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

// adoptPerson starts Claude Code in a tmux session of the person's own (no
// parley hooks), waits for its input box, and adopts it by name.
func (h *harness) adoptPerson(name, thread string) (*session, *sink) {
	h.t.Helper()
	ctx := context.Background()
	if err := h.c.NewSession(ctx, ctl.NewSessionOptions{Name: name, Cwd: h.cwd, Env: h.env, Argv: []string{h.claud, "--model", "claude-sonnet-4-5"}}); err != nil {
		h.t.Fatal(err)
	}
	testkit.Eventually(h.t, 60*time.Second, func() bool {
		out, err := h.c.Capture(ctx, name, 0)
		return err == nil && pane.Read(out).HasBox()
	}, "the person's Claude Code never showed its input box")
	spec := h.spec(thread)
	spec.Options[OptAdopt] = name
	k := newSink()
	sess, err := h.drv.Start(ctx, spec, k)
	if err != nil {
		h.t.Fatalf("Start (adopt): %v", err)
	}
	h.t.Cleanup(func() { _ = sess.Close(context.Background()) })
	return sess.(*session), k
}

// In an adopted session (no hooks, so card ids come from the pane alone) the
// same Bash command asked twice is two cards: the second is not taken for the
// answered first, and a message sent behind it goes once it is answered.
func TestAdoptedRepeatedMenuIsANewCard(t *testing.T) {
	h := newHarness(t, scenario())
	s, k := h.adoptPerson("mine", "t-repeat")
	if s.useHooks {
		t.Fatal("an adopted session runs without parley's hooks")
	}
	for i := 1; i <= 2; i++ {
		if err := h.prompt(s, fmt.Sprintf("m%d", i), "run it"); err != nil {
			t.Fatalf("Prompt %d: %v", i, err)
		}
		if !poll(30*time.Second, func() bool { return len(k.permissions()) == i }) {
			t.Fatalf("run %d: %d permission cards, want %d\n%s", i, len(k.permissions()), i, plain(h.capture(s)))
		}
		card := k.permissions()[i-1]
		if card.Tool.Name != "Bash" {
			t.Fatalf("card %d: %+v, want a Bash card", i, card)
		}
		if i == 2 {
			if first := k.permissions()[0]; first.RequestID == card.RequestID {
				t.Fatalf("the second appearance has the answered card's id %s", card.RequestID)
			}
			// A message sent while the second menu is up waits behind it.
			sent := make(chan error, 1)
			go func() { sent <- h.prompt(s, "m3", "hello") }()
			testkit.Eventually(t, 10*time.Second, func() bool {
				d := k.deliveries()
				return len(d) == 1 && d[0].MessageID == "m3" && d[0].State == chat.DeliveryQueued
			}, "no queued receipt behind the second menu: %+v", k.deliveries())
			defer func() {
				if err := <-sent; err != nil {
					t.Errorf("the message queued behind the second card: got %v, want nil", err)
				}
				if !poll(30*time.Second, func() bool { return h.modelGot("hello") }) {
					t.Errorf("the queued message never reached the model: %s\n%s", bodiesWith(h, "hello"), plain(h.capture(s)))
				}
			}()
		}
		if err := s.AnswerPermission(answerCtx(t), card.RequestID, driver.PermissionAnswer{OptionID: "1"}); err != nil {
			t.Fatalf("AnswerPermission %d: %v\n%s", i, err, plain(h.capture(s)))
		}
		if !poll(30*time.Second, func() bool {
			ids := h.srv.ToolUseIDs("Bash")
			if len(ids) < i {
				return false
			}
			_, ok := h.srv.ToolResult(ids[i-1])
			return ok
		}) {
			t.Fatalf("run %d: the stand-in never got the Bash tool result\n%s", i, plain(h.capture(s)))
		}
		if i == 1 {
			waitTurns(t, k, 1)
		}
	}
	if got := len(k.permissions()); got != 2 {
		t.Errorf("permission cards: got %d, want 2", got)
	}
}

// Two questions in one picker: the card carries both (from the PreToolUse
// hook), and the answer walks the pages and submits.
func TestQuestionCardTwoQuestions(t *testing.T) {
	h := newHarness(t, scenario())
	s, k := h.start("t-two")
	if err := h.prompt(s, "m1", "asktwo"); err != nil {
		t.Fatalf("Prompt: %v", err)
	}
	testkit.Eventually(t, 30*time.Second, func() bool { return len(k.questions()) == 1 }, "no question card")
	card := k.questions()[0]
	if len(card.Questions) != 2 || card.Questions[1].Question != "Which size?" {
		t.Fatalf("card %+v, want both questions", card)
	}
	answers := chat.Answers{"Which color do you prefer?": {Text: "Red"}, "Which size?": {Text: "Large"}}
	if err := s.AnswerQuestion(answerCtx(t), card.RequestID, driver.QuestionAnswer{Answers: answers}); err != nil {
		t.Fatalf("AnswerQuestion: %v\n%s", err, plain(h.capture(s)))
	}
	if !poll(30*time.Second, func() bool { _, ok := h.srv.ToolResult(card.RequestID); return ok }) {
		t.Fatalf("the stand-in never got the answers\n%s", plain(h.capture(s)))
	}
	res, _ := h.srv.ToolResult(card.RequestID)
	for _, want := range []string{`"Which color do you prefer?"="Red"`, `"Which size?"="Large"`} {
		if !strings.Contains(res.ResultText(), want) {
			t.Errorf("tool result %q lacks %q", res.ResultText(), want)
		}
	}
	waitTurns(t, k, 1)
	if got := len(k.questions()); got != 1 {
		t.Errorf("question cards: got %d, want 1", got)
	}
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
	if !poll(20*time.Second, func() bool {
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
	if !poll(30*time.Second, func() bool {
		reqs := h.srv.ScenarioRequests()
		return len(reqs) > 0 && reqs[len(reqs)-1].LastUserText() == "hello"
	}) {
		t.Fatalf("the model's last request after the cancel does not end with \"hello\" alone: %s\n%s", bodiesWith(h, "hello"), plain(h.capture(s)))
	}
	waitTurns(t, k, 2)
}

// A rejection with the person's words: "Tab to amend" on "No", and the model
// gets the words with the rejected tool result.
func TestPermissionRejectWithWords(t *testing.T) {
	h := newHarness(t, scenario())
	s, k := h.start("t-reject")
	if err := h.prompt(s, "m1", "run it"); err != nil {
		t.Fatalf("Prompt: %v", err)
	}
	testkit.Eventually(t, 30*time.Second, func() bool { return len(k.permissions()) == 1 }, "no permission card")
	card := k.permissions()[0]
	if err := s.AnswerPermission(answerCtx(t), card.RequestID, driver.PermissionAnswer{OptionID: "3", Message: "use printf instead"}); err != nil {
		t.Fatalf("AnswerPermission(No, with words): %v\n%s", err, plain(h.capture(s)))
	}
	if !poll(30*time.Second, func() bool { _, ok := h.srv.ToolResult(card.RequestID); return ok }) {
		t.Fatalf("the stand-in never got the tool result")
	}
	res, _ := h.srv.ToolResult(card.RequestID)
	if !strings.Contains(res.ResultText(), "use printf instead") || !strings.Contains(res.ResultText(), "doesn't want to proceed") {
		t.Errorf("tool result %q, want the rejection with the words", res.ResultText())
	}
	if _, err := os.Stat(filepath.Join(h.cwd, "made-by-bash")); err == nil {
		t.Error("the rejected command ran")
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
