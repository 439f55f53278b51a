//go:build e2e

package claude_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/audit"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
	"github.com/parleyhq/parley/internal/testkit/tmuxterm"
)

// A person's own session, running now where they left it: adopted from its
// tmux pane, or watched in a plain terminal.

func adoptScenario() claudeapi.Scenario {
	sc := continueScenario()
	sc.Rules = append(sc.Rules,
		claudeapi.Rule{Match: claudeapi.Match{Exact: "make the file"}, Reply: claudeapi.Bash("touch made-by-bash", "Make a file")},
		claudeapi.Rule{Match: claudeapi.Match{ToolResult: "Bash"}, Reply: claudeapi.Text("The command ran.", 1, 0)},
	)
	return sc
}

// tuiInTmux starts the real Claude Code TUI in a tmux pane as a person
// would (the rig's HOME and model API, in its work folder), says one thing
// to it, and returns the terminal and the session's id.
func (r *rig) tuiInTmux(t *testing.T, first, answer string) (*tmuxterm.Term, string) {
	t.Helper()
	env := []string{"TERM=xterm-256color"}
	for k, v := range r.cfg.Agents[0].Env {
		env = append(env, k+"="+v)
	}
	tm := tmuxterm.Start(t, env, "env", "-C", r.work, r.cfg.Agents[0].Command)
	tm.Within = 60 * time.Second
	// Claude Code writes its HOME as it exits: it is asked to, and waited
	// for, before the test's folders go (cleanups run last first).
	t.Cleanup(func() {
		tm.TypeLine("/exit")
		testkit.Within(15*time.Second, func() bool { _, ok := tm.ExitStatus(); return ok })
	})
	tm.WaitScreen("Claude Code's input box", tmuxterm.Has("❯"))
	tm.TypeLine(first)
	tm.WaitScreen("the answer", tmuxterm.Has(answer))
	var id string
	testkit.Eventually(t, wait, func() bool {
		files, _ := filepath.Glob(filepath.Join(r.home, ".claude", "projects", "*", "*.jsonl"))
		if len(files) != 1 {
			return false
		}
		b, err := os.ReadFile(files[0])
		if err != nil || !strings.Contains(string(b), answer) {
			return false
		}
		id = strings.TrimSuffix(filepath.Base(files[0]), ".jsonl")
		return true
	}, "the TUI's transcript with its first turn")
	return tm, id
}

// asked counts the model requests whose newest person text is text: each is
// one delivery of it (a tool's follow-up request ends with the tool result).
func asked(api *claudeapi.Server, text string) (n int, last claudeapi.Request) {
	for _, q := range api.ScenarioRequests() {
		if q.LastUserText() == text {
			n, last = n+1, q
		}
	}
	return n, last
}

func TestAdoptClaudeTUIInATmuxPane(t *testing.T) {
	testkit.NeedsTmux(t)
	r := newRig(t, adoptScenario(), nil)
	tm, id := r.tuiInTmux(t, "remember the word teapot", "Remembered teapot.")
	paneID := strings.TrimSpace(tm.Tmux("display-message", "-p", "-t", "t", "#{pane_id}"))
	server := filepath.Base(strings.TrimSpace(tm.Tmux("display-message", "-p", "#{socket_path}")))

	// One action: the same resume_session that continues a session not
	// running adopts the pane; its earlier turn is imported.
	s := r.dial("phone", -1)
	at := continueSession(t, s, id, r.work)
	want := []string{"user: remember the word teapot", "agent: Remembered teapot."}
	if got := imported(s.Snapshot()[:at]); !slices.Equal(got, want) {
		t.Fatalf("imported turns: got %q want %q\n%s", got, want, chatsock.Summary(s.Snapshot()))
	}
	s.WaitFor(at, wait, chatsock.Field(chat.TypeSessionInfo, "state", "resumed"), "the pane followed")
	thread := s.Get(at).Thread

	// A message is typed into that pane, once, and answered there.
	s.Send(chatsock.Msg("m1", "what was the word?"))
	s.WaitFor(at, wait, chatsock.Delivery("m1", chat.DeliverySubmitted), "the message submitted in the pane")
	s.WaitFor(at, wait, func(e client.Event) bool {
		return e.Type == chat.TypeAgentChunk && chatsock.FieldOf(e, "text") == "teapot"
	}, "the answer from the pane's transcript")
	s.WaitFor(at, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "the turn's end")
	tm.WaitScreen("the message in the person's pane", tmuxterm.Has("what was the word?"))
	if n, q := asked(r.api, "what was the word?"); n != 1 || !slices.Equal(q.UserTexts(), []string{"remember the word teapot", "what was the word?"}) {
		t.Fatalf("the model was asked %d times; last with %q", n, q.UserTexts())
	}

	// A permission card from the pane's menu, answered from the phone.
	at = s.Len()
	s.Send(chatsock.Msg("m2", "make the file"))
	i, _ := permissionCard(t, s, at)
	var card chat.PermissionRequest
	if err := s.Get(i).Decode(&card); err != nil {
		t.Fatal(err)
	}
	// The pane's menu's own options (their numbers), each with its kind.
	yes := ""
	for _, o := range card.Options {
		if o.Kind == chat.OptionAllowOnce {
			yes = o.ID
		}
	}
	s.Send(map[string]any{"type": "permission_response", "request_id": card.RequestID, "option_id": yes})
	s.WaitFor(i, wait, chatsock.Type(chat.TypePermissionResolved), "the card resolved")
	s.WaitFor(i, wait, func(e client.Event) bool {
		return e.Type == chat.TypeAgentChunk && chatsock.FieldOf(e, "text") == "The command ran."
	}, "the follow-up text")
	s.WaitFor(i, wait, chatsock.PromptDone("m2", chat.StopEndTurn), "the card's turn done")
	if _, err := os.Stat(filepath.Join(r.work, "made-by-bash")); err != nil {
		t.Fatalf("the tool did not run: %v", err)
	}

	// Handed back: the words that take the person to that very pane.
	at = s.Len()
	s.Send(map[string]any{"type": "hand_back"})
	e := s.Get(s.WaitFor(at, wait, chatsock.Field(chat.TypeSessionInfo, "state", "handed_back"), "handed back"))
	if got, want := chatsock.FieldOf(e, "command"), driver.ShellLine("tmux", "-L", server, "attach", "-t", paneID); got != want {
		t.Fatalf("hand back command %q, want %q", got, want)
	}
	alive(t, tm)
	// The audit says the pane was adopted, and handed back, by whom.
	var trail []string
	for _, en := range r.auditOf(t, string(thread)) {
		if en.Kind == audit.KindSessionContinue || en.Kind == audit.KindSessionHandBack {
			trail = append(trail, en.Kind+" by "+en.Actor+": "+en.Subject)
		}
	}
	if want := []string{"session.continue by token: claude session " + id + " adopted",
		"session.handback by token: claude session " + id + " handed back to a terminal"}; !slices.Equal(trail, want) {
		t.Fatalf("the thread's audit:\n%s\nwant:\n%s", strings.Join(trail, "\n"), strings.Join(want, "\n"))
	}

	// Adopted again, then the thread deleted: the pane is the person's, and lives on.
	at = continueSession(t, s, id, r.work)
	s.WaitFor(at, wait, chatsock.Field(chat.TypeSessionInfo, "state", "resumed"), "the pane followed again")
	s.Send(map[string]any{"type": "delete_thread", "thread_id": string(thread), "ref": "del"})
	// The route's own thread: its connection ends, saying why.
	if err := s.WaitEnd(wait); err == nil || !strings.Contains(err.Error(), "the thread was deleted") {
		t.Fatalf("after delete_thread: %v", err)
	}
	alive(t, tm)
	tm.TypeLine("and the colour green")
	tm.WaitScreen("the person's own turn in the pane after the delete", tmuxterm.Has("Green noted."))
}

// alive fails unless the pane still runs Claude Code with its input box.
func alive(t *testing.T, tm *tmuxterm.Term) {
	t.Helper()
	if st, ok := tm.ExitStatus(); ok {
		t.Fatalf("Claude Code in the pane exited (%s)", st)
	}
	pid := strings.TrimSpace(tm.Tmux("display-message", "-p", "-t", "t", "#{pane_pid}"))
	var n int
	if _, err := fmt.Sscan(pid, &n); err != nil || syscall.Kill(n, 0) != nil {
		t.Fatalf("the pane's process %q is gone", pid)
	}
	tm.WaitScreen("the input box still there", tmuxterm.Has("❯"))
}

// A session running in a plain terminal (not tmux) is refused unless
// watched; watched, the thread follows its transcript live, refuses sends
// with the reason, and once the process exits continues it as any thread.
func TestWatchSessionInAPlainTerminal(t *testing.T) {
	sc := continueScenario()
	gate := claudeapi.NewGate(0)
	sc.Rules = append(sc.Rules, claudeapi.Rule{Match: claudeapi.Match{Exact: "slowly"}, Reply: claudeapi.Held(claudeapi.Text("Slow answer, at last.", 1, 0), gate)})
	r := newRig(t, sc, nil)
	r.terminal(t, "-p", "remember the word teapot")
	id := r.onlySession(t)
	running := r.terminalRunning(t, id, "-p", "--resume", id, "slowly")
	defer gate.Open()

	s := r.dial("phone", -1)
	at := s.Len()
	s.Send(map[string]any{"type": "resume_session", "agent": "claude", "session_id": id, "cwd": r.work})
	if e := s.Get(s.WaitFor(at, wait, chatsock.Type(chat.TypeError), "the refusal without watch")); chatsock.FieldOf(e, "code") != chat.CodeSessionRunning {
		t.Fatalf("refusal: %s", e.Raw)
	}
	at = s.Len()
	s.Send(map[string]any{"type": "resume_session", "agent": "claude", "session_id": id, "cwd": r.work, "watch": true})
	s.WaitFor(at, wait, chatsock.Field(chat.TypeSessionInfo, "state", "continued"), "watched")
	s.WaitFor(at, wait, chatsock.Field(chat.TypeSessionInfo, "state", "resumed"), "the transcript followed")

	// Nothing typed into a terminal parley cannot reach: the reason says so.
	s.Send(chatsock.Msg("m1", "what was the word?"))
	failed := s.Get(s.WaitFor(at, wait, chatsock.Delivery("m1", chat.DeliveryFailed), "the send refused"))
	if !strings.Contains(fmt.Sprint(chatsock.FieldOf(failed, "detail")), "only watched here") {
		t.Fatalf("failed receipt: %s", failed.Raw)
	}

	// The terminal's answer reaches the thread as the terminal's process writes it.
	gate.Open()
	s.WaitFor(at, wait, func(e client.Event) bool {
		return e.Type == chat.TypeAgentChunk && chatsock.FieldOf(e, "text") == "Slow answer, at last."
	}, "the terminal's answer, followed live")
	if err := running.Wait(); err != nil {
		t.Fatalf("the terminal's claude: %v", err)
	}
	s.WaitFor(at, wait, chatsock.Field(chat.TypeSessionInfo, "state", "exited"), "the process's exit")

	// Then the thread continues the session itself, with all of it.
	at = s.Len()
	s.Send(chatsock.Msg("m2", "what was the word?"))
	s.WaitFor(at, wait, chatsock.PromptDone("m2", chat.StopEndTurn), "the thread's own turn")
	if n, q := asked(r.api, "what was the word?"); n != 1 || !slices.Equal(q.UserTexts(), []string{"remember the word teapot", "slowly", "what was the word?"}) {
		t.Fatalf("the model was asked %d times; last with %q", n, q.UserTexts())
	}
}
