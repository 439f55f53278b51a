//go:build e2e

package claude_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
	"github.com/parleyhq/parley/internal/testkit/tmuxterm"
)

// A thread that adopted a pane or watched a plain terminal follows that
// process again after parley restarts, or, the process gone meanwhile, says
// so and continues the session itself.

// resumedCount counts the thread's "resumed" session events: one per time
// its session (here, the person's process) was followed.
func resumedCount(evs []client.Event) int {
	n := 0
	for _, e := range evs {
		if chatsock.Field(chat.TypeSessionInfo, "state", "resumed")(e) {
			n++
		}
	}
	return n
}

func TestAdoptedPaneFollowedAgainAfterARestart(t *testing.T) {
	testkit.NeedsTmux(t)
	r := newRig(t, adoptScenario(), nil)
	tm, id := r.tuiInTmux(t, "remember the word teapot", "Remembered teapot.")
	s := r.dial("phone", -1)
	at := continueSession(t, s, id, r.work)
	s.WaitFor(at, wait, chatsock.Field(chat.TypeSessionInfo, "state", "resumed"), "the pane followed")

	r.stop()
	r.start()
	s = r.dial("phone", -1)
	testkit.Eventually(t, wait, func() bool { return resumedCount(s.Snapshot()) == 2 }, "the pane followed again after the restart")

	// The message is typed into the person's pane, once: no refusal, no
	// second process on the session.
	at = s.Len()
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
	if n := r.runningOn(t, id); n != 1 {
		t.Fatalf("%d Claude Code processes run session %s, want the pane's alone", n, id)
	}
	alive(t, tm)
}

// runningOn counts the live Claude Code processes whose record of running
// sessions names session id.
func (r *rig) runningOn(t *testing.T, id string) int {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(r.home, ".claude", "sessions", "*.json"))
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil || !strings.Contains(string(b), id) {
			continue
		}
		pid, _ := strconv.Atoi(strings.TrimSuffix(filepath.Base(f), ".json"))
		if pid > 0 && syscall.Kill(pid, 0) == nil {
			n++
		}
	}
	return n
}

func TestWatchedTerminalAcrossRestarts(t *testing.T) {
	sc := continueScenario()
	gate, gate2 := claudeapi.NewGate(0), claudeapi.NewGate(0)
	sc.Rules = append(sc.Rules,
		claudeapi.Rule{Match: claudeapi.Match{Exact: "slowly"}, Reply: claudeapi.Held(claudeapi.Text("Slow answer, at last.", 1, 0), gate)},
		claudeapi.Rule{Match: claudeapi.Match{Exact: "slowly again"}, Reply: claudeapi.Held(claudeapi.Text("Slow again, done.", 1, 0), gate2)})
	r := newRig(t, sc, nil)
	r.terminal(t, "-p", "remember the word teapot")
	id := r.onlySession(t)
	running := r.terminalRunning(t, id, "-p", "--resume", id, "slowly")
	defer gate.Open()
	defer gate2.Open()
	watchIt := func(s *chatsock.Conn) {
		t.Helper()
		at := s.Len()
		s.Send(map[string]any{"type": "resume_session", "agent": "claude", "session_id": id, "cwd": r.work, "watch": true})
		s.WaitFor(at, wait, chatsock.Field(chat.TypeSessionInfo, "state", "resumed"), "the transcript followed")
	}
	s := r.dial("phone", -1)
	watchIt(s)

	// Restarted while the terminal's claude runs: watched again, its answer
	// followed live, a send refused as read-only (not as a session running
	// elsewhere).
	r.stop()
	r.start()
	s = r.dial("phone", -1)
	testkit.Eventually(t, wait, func() bool { return resumedCount(s.Snapshot()) == 2 }, "watched again after the restart")
	at := s.Len()
	s.Send(chatsock.Msg("m1", "what was the word?"))
	failed := s.Get(s.WaitFor(at, wait, chatsock.Delivery("m1", chat.DeliveryFailed), "the send refused"))
	if !strings.Contains(fmt.Sprint(chatsock.FieldOf(failed, "detail")), "only watched here") {
		t.Fatalf("failed receipt: %s", failed.Raw)
	}
	gate.Open()
	s.WaitFor(at, wait, func(e client.Event) bool {
		return e.Type == chat.TypeAgentChunk && chatsock.FieldOf(e, "text") == "Slow answer, at last."
	}, "the terminal's answer, followed after the restart")
	if err := running.Wait(); err != nil {
		t.Fatalf("the terminal's claude: %v", err)
	}
	s.WaitFor(at, wait, chatsock.Field(chat.TypeSessionInfo, "state", "exited"), "the process's exit")

	// Watched again; the terminal's claude ends while parley is stopped:
	// the thread says so, and continues the session itself.
	running = r.terminalRunning(t, id, "-p", "--resume", id, "slowly again")
	watchIt(s)
	r.stop()
	gate2.Open()
	if err := running.Wait(); err != nil {
		t.Fatalf("the terminal's second claude: %v", err)
	}
	r.start()
	s = r.dial("phone", -1)
	ended := s.WaitFor(0, wait, func(e client.Event) bool {
		return chatsock.Field(chat.TypeSessionInfo, "state", "exited")(e) &&
			strings.Contains(fmt.Sprint(chatsock.FieldOf(e, "detail")), "while parley was stopped")
	}, "the words that the watched process ended meanwhile")
	t.Logf("%s", s.Get(ended).Raw)
	// Its answer, written while parley was stopped, is shown before that.
	if i := s.WaitFor(0, wait, agentSaid("Slow again, done."), "the answer given while parley was stopped"); i > ended {
		t.Fatalf("the answer given while parley was stopped is shown after the words that the process ended")
	}
	at = s.Len()
	s.Send(chatsock.Msg("m2", "what was the word?"))
	s.WaitFor(at, wait, chatsock.PromptDone("m2", chat.StopEndTurn), "the thread's own turn")
	if n, q := asked(r.api, "what was the word?"); n != 1 || !slices.Equal(q.UserTexts(), []string{"remember the word teapot", "slowly", "slowly again", "what was the word?"}) {
		t.Fatalf("the model was asked %d times; last with %q", n, q.UserTexts())
	}
}

// A Claude Code TUI in a pane parley does not adopt but watches: the
// prompts the person types there reach the thread as theirs, and a
// permission the agent asks there is a card answered there only (no
// buttons), closed once the terminal answered it.
func TestWatchedTUIShowsThePersonsPromptsAndCards(t *testing.T) {
	testkit.NeedsTmux(t)
	r := newRig(t, adoptScenario(), nil)
	tm, id := r.tuiInTmux(t, "remember the word teapot", "Remembered teapot.")
	s := r.dial("phone", -1)
	at := s.Len()
	s.Send(map[string]any{"type": "resume_session", "agent": "claude", "session_id": id, "cwd": r.work, "watch": true})
	s.WaitFor(at, wait, chatsock.Field(chat.TypeSessionInfo, "state", "resumed"), "the transcript followed")

	// The person types in the terminal: the thread shows their prompt, from
	// the terminal, and the answer.
	at = s.Len()
	tm.TypeLine("and the colour green")
	i := s.WaitFor(at, wait, func(e client.Event) bool {
		return e.Type == chat.TypeUserMessage && chatsock.FieldOf(e, "text") == "and the colour green"
	}, "the person's prompt typed in the terminal")
	var um chat.UserMessage
	if err := s.Get(i).Decode(&um); err != nil || um.From.Channel != "terminal" || um.Imported {
		t.Fatalf("the terminal's prompt: %s (%v)", s.Get(i).Raw, err)
	}
	s.WaitFor(i, wait, chatsock.Delivery(um.MessageID, chat.DeliverySubmitted), "its receipt")
	s.WaitFor(i, wait, func(e client.Event) bool {
		return e.Type == chat.TypeAgentChunk && chatsock.FieldOf(e, "text") == "Green noted."
	}, "the answer in the terminal")

	// A permission asked in the terminal: a card with no buttons, answered there.
	at = s.Len()
	tm.TypeLine("make the file")
	i = s.WaitFor(at, wait, chatsock.Type(chat.TypePermissionRequest), "the terminal's permission prompt as a card")
	var card chat.PermissionRequest
	if err := s.Get(i).Decode(&card); err != nil {
		t.Fatal(err)
	}
	if card.Elsewhere != chat.ElsewhereTerminal || len(card.Options) != 0 || card.Tool.Name != "Bash" || card.Tool.ToolCallID == "" {
		t.Fatalf("the card: %s", s.Get(i).Raw)
	}
	// An answer from the phone cannot reach the terminal: refused, the card stays open.
	s.Send(map[string]any{"type": "permission_response", "request_id": card.RequestID, "option_id": "1"})
	s.WaitFor(i, wait, func(e client.Event) bool {
		return e.Type == chat.TypeError && chatsock.FieldOf(e, "ref") == card.RequestID
	}, "the phone's answer refused")
	tm.WaitScreen("the permission menu in the terminal", tmuxterm.Has("Do you want to proceed?"))
	tm.Keys("Enter") // the person allows it there
	j := s.WaitFor(i, wait, chatsock.Type(chat.TypePermissionResolved), "the card closed")
	if got := chatsock.FieldOf(s.Get(j), "reason"); got != "answered in the terminal" {
		t.Fatalf("the card's close: %s", s.Get(j).Raw)
	}
	s.WaitFor(i, wait, func(e client.Event) bool {
		return e.Type == chat.TypeAgentChunk && chatsock.FieldOf(e, "text") == "The command ran."
	}, "the follow-up text")
	if _, err := os.Stat(filepath.Join(r.work, "made-by-bash")); err != nil {
		t.Fatalf("the tool did not run: %v", err)
	}
}
