//go:build e2e

package gemini_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/sessions"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/geminiapi"
	"github.com/parleyhq/parley/internal/testkit/tmuxterm"
)

// A Gemini CLI TUI a person runs in a tmux pane is listed as running there,
// and continuing its session adopts that pane (no config edit): a message
// from the socket is typed into it once, proven submitted, reaches the
// model once, and the answer's words, followed in Gemini's chat, reach the
// thread before the turn's end (and are not imported again later); a prompt
// typed in the pane meanwhile shows as the person's, from the terminal;
// Gemini's tool confirmation is a card, answered from the socket or in the
// pane (the card then says so), and the turn ends; handed back, the words
// are tmux attach's and the pane lives on. Once the person quits it, it
// continues as any.
func TestAdoptGeminiTUIInATmuxPane(t *testing.T) {
	r := newRig(t)
	tm, found := r.tuiInPane(t)
	server := filepath.Base(strings.TrimSpace(tm.Tmux("display-message", "-p", "#{socket_path}")))
	if want := "tmux:" + server + ":t:0.0"; !found.Running || found.Where != want || found.PID <= 0 {
		t.Fatalf("listed %+v, want running in %s", found, want)
	}
	paneID := strings.TrimSpace(tm.Tmux("display-message", "-p", "-t", "t", "#{pane_id}"))

	s := r.dial(t, "phone")
	s.Send(map[string]any{"type": "resume_session", "agent": "gemini", "session_id": found.ID, "cwd": r.work})
	at := s.WaitFor(0, wait, chatsock.Field(chat.TypeSessionInfo, "state", "continued"), "the session continued here")
	s.WaitFor(at, wait, chatsock.Field(chat.TypeSessionInfo, "state", "resumed"), "the pane adopted")

	// The answer's words, read from Gemini's chat as it writes it, reach
	// the thread once, in order, before the turn's end.
	s.Send(chatsock.Msg("m0", "hello"))
	sub := s.WaitFor(at, wait, chatsock.Delivery("m0", chat.DeliverySubmitted), "the first message submitted in the pane")
	end := s.WaitFor(sub, wait, chatsock.PromptDone("m0", chat.StopEndTurn), "the first turn's end")
	if got := chatsock.Chunks(s.Snapshot()[sub:end]); got != answer {
		t.Fatalf("the answer's words before the turn's end: %q, want %q\n%s", got, answer, chatsock.Summary(s.Snapshot()[at:]))
	}

	at = end
	s.Send(chatsock.Msg("m1", "make the file"))
	s.WaitFor(at, wait, chatsock.Delivery("m1", chat.DeliverySubmitted), "the message submitted in the pane")
	// Gemini's confirmation, read from the pane, is a card: answered from
	// the socket by its option, the command runs and the turn ends.
	i := s.WaitFor(at, wait, chatsock.Type(chat.TypePermissionRequest), "Gemini's shell confirmation as a card")
	var card chat.PermissionRequest
	if err := s.Get(i).Decode(&card); err != nil {
		t.Fatal(err)
	}
	allow := ""
	for _, o := range card.Options {
		if o.Kind == chat.OptionAllowOnce && o.Label == "Allow once" {
			allow = o.ID
		}
	}
	if card.Tool.Name != "Shell" || !strings.Contains(card.Tool.Title, "touch made-by-gemini") || allow == "" || len(card.Options) != 3 {
		t.Fatalf("the card: %s", s.Get(i).Raw)
	}
	s.Send(map[string]any{"type": "permission_response", "request_id": card.RequestID, "option_id": allow})
	j := s.WaitFor(i, wait, chatsock.Type(chat.TypePermissionResolved), "the card resolved")
	if got := chatsock.FieldOf(s.Get(j), "option_id"); got != allow {
		t.Fatalf("the card's close: %s", s.Get(j).Raw)
	}
	tm.WaitScreen("the command's follow-up in the pane", tmuxterm.Has("The command ran."))
	end = s.WaitFor(at, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "the turn's end, told by the screen")
	if got := chatsock.Chunks(s.Snapshot()[at:end]); got != "The command ran." {
		t.Fatalf("the words after the command, before the turn's end: %q", got)
	}
	if _, err := os.Stat(filepath.Join(r.work, "made-by-gemini")); err != nil {
		t.Fatalf("the command did not run: %v", err)
	}
	if n := asked(r.api, "make the file"); n != 1 {
		t.Fatalf("the model was asked %d times for the message, want once", n)
	}
	// The command, read from Gemini's chat once it ran, is in the thread
	// with its end.
	k := s.WaitFor(at, wait, func(e client.Event) bool {
		return e.Type == chat.TypeToolCall && chatsock.FieldOf(e, "title") == "touch made-by-gemini" && chatsock.FieldOf(e, "kind") == "execute"
	}, "the command in the thread")
	callID := chatsock.FieldOf(s.Get(k), "tool_call_id")
	s.WaitFor(k, wait, func(e client.Event) bool {
		return e.Type == chat.TypeToolCallUpdate && chatsock.FieldOf(e, "tool_call_id") == callID && chatsock.FieldOf(e, "status") == "completed"
	}, "the command's end in the thread")

	// A second confirmation, answered by the person in the pane: its card
	// closes, saying so, and the turn ends.
	at = s.Len()
	s.Send(chatsock.Msg("m2", "make another"))
	i = s.WaitFor(at, wait, chatsock.Type(chat.TypePermissionRequest), "the second confirmation as a card")
	var second chat.PermissionRequest
	if err := s.Get(i).Decode(&second); err != nil {
		t.Fatal(err)
	}
	if second.RequestID == card.RequestID || !strings.Contains(second.Tool.Title, "touch made-again") {
		t.Fatalf("the second card: %s", s.Get(i).Raw)
	}
	tm.WaitScreen("the second confirmation in the pane", tmuxterm.Has("touch made-again", "Allow execution"))
	tm.Keys("1")
	j = s.WaitFor(i, wait, chatsock.Type(chat.TypePermissionResolved), "the second card closed")
	if chatsock.FieldOf(s.Get(j), "request_id") != second.RequestID || chatsock.FieldOf(s.Get(j), "reason") != "answered in the terminal" {
		t.Fatalf("the second card's close: %s", s.Get(j).Raw)
	}
	s.WaitFor(at, wait, chatsock.PromptDone("m2", chat.StopEndTurn), "the second turn's end")
	if _, err := os.Stat(filepath.Join(r.work, "made-again")); err != nil {
		t.Fatalf("the second command did not run: %v", err)
	}

	// A prompt the person types in the pane shows as theirs, from the
	// terminal, with its answer; parley's own sends are not shown again.
	at = s.Len()
	prompt(tm, "typed in the pane")
	i = s.WaitFor(at, wait, chatsock.Field(chat.TypeUserMessage, "text", "typed in the pane"), "the prompt typed in the pane, in the thread")
	var typed chat.UserMessage
	if err := s.Get(i).Decode(&typed); err != nil {
		t.Fatal(err)
	}
	if typed.From.Channel != chat.ElsewhereTerminal || typed.Imported {
		t.Fatalf("the typed prompt: %s", s.Get(i).Raw)
	}
	testkit.Eventually(t, wait, func() bool { return chatsock.Chunks(s.Snapshot()[i:]) == "Answered in the pane." }, "its answer in the thread")
	users := map[string]int{}
	for _, e := range s.Snapshot() {
		if e.Type == chat.TypeUserMessage {
			users[fmt.Sprint(chatsock.FieldOf(e, "text"))]++
		}
	}
	// "hello": typed before parley (imported), then sent as m0.
	if users["hello"] != 2 || users["make the file"] != 1 || users["make another"] != 1 || users["typed in the pane"] != 1 || len(users) != 4 {
		t.Fatalf("the thread's prompts: %v", users)
	}

	at = s.Len()
	s.Send(map[string]any{"type": "hand_back"})
	e := s.Get(s.WaitFor(at, wait, chatsock.Field(chat.TypeSessionInfo, "state", "handed_back"), "handed back"))
	if got, want := chatsock.FieldOf(e, "command"), driver.ShellLine("tmux", "-L", server, "attach", "-t", paneID); got != want {
		t.Fatalf("hand back command %q, want %q", got, want)
	}
	if st, ok := tm.ExitStatus(); ok {
		t.Fatalf("Gemini in the pane exited (%s) at the hand back", st)
	}

	// Ctrl+C twice, each once the screen shows the last: /quit with Enter
	// can go to the command menu it opens instead.
	tm.Keys("C-c")
	tm.WaitScreen("Gemini asking to press again", tmuxterm.Has("Press Ctrl+C again to exit"))
	tm.Keys("C-c")
	tm.WaitScreen("Gemini gone", func(string) bool { _, ok := tm.ExitStatus(); return ok })
	at = s.Len()
	s.Send(map[string]any{"type": "resume_session", "agent": "gemini", "session_id": found.ID, "cwd": r.work})
	i = s.WaitFor(at, wait, chatsock.Field(chat.TypeSessionInfo, "state", "continued"), "continued once Gemini quit")
	// What was streamed while the pane was adopted is not imported again:
	// the pane's own first answer (imported once), the phone's (streamed),
	// the typed prompt's, the two follow-ups of the commands.
	all := chatsock.Chunks(s.Snapshot())
	if n := strings.Count(all, answer); n != 2 {
		t.Errorf("the scripted answer shown %d times, want 2 (the pane's, the phone's)", n)
	}
	if n := strings.Count(all, "Answered in the pane."); n != 1 {
		t.Errorf("the typed prompt's answer shown %d times, want once", n)
	}
	if n := strings.Count(all, "The command ran."); n != 2 {
		t.Errorf("the commands' follow-up shown %d times, want 2", n)
	}
	if d := chatsock.FieldOf(s.Get(i), "detail"); d != "0 earlier messages imported from the agent's record" {
		t.Errorf("continued again: %v", d)
	}
}

// asked counts the model requests whose newest person text is text: each is
// one delivery of it (a tool's follow-up request ends with the tool result).
func asked(api *geminiapi.Server, text string) int {
	n := 0
	for _, q := range api.ScenarioRequests() {
		if q.LastUserText() == text {
			n++
		}
	}
	return n
}

// prompt types text into Gemini CLI's input box and, once the box shows it,
// Enter: an Enter that comes with the text, as a paste, is taken for a new
// line in the box.
func prompt(tm *tmuxterm.Term, text string) {
	tm.T.Helper()
	tm.TypeAndEnter(text, "> "+text)
}

// tuiInPane starts the Gemini CLI TUI in a tmux pane, as a person does, and
// has its first turn there ("hello"); it returns the pane and the session
// as parley lists it then.
func (r *rig) tuiInPane(t *testing.T) (*tmuxterm.Term, sessions.Session) {
	t.Helper()
	tm := tmuxterm.Start(t, append(r.env, "TERM=xterm-256color"), "env", "-C", r.work, testkit.GeminiBin(t))
	tm.Within = wait
	tm.WaitScreen("Gemini's input box", tmuxterm.Has("Type your message"))
	prompt(tm, "hello")
	tm.WaitScreen("the answer", tmuxterm.Has("Gemini, scripted"))
	var found sessions.Session
	testkit.Eventually(t, 30*time.Second, func() bool {
		l := r.sessionsNow(t)
		if len(l) != 1 || l[0].Turns != 1 {
			return false
		}
		found = l[0]
		return true
	}, "the TUI's session listed with its turn")
	return tm, found
}

// sessionsNow is what GET /api/sessions lists of Gemini's sessions.
func (r *rig) sessionsNow(t *testing.T) []sessions.Session {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+r.d.Addr()+"/api/sessions?agent=gemini", nil)
	req.Header.Set("Authorization", "Bearer "+r.d.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var l sessions.Listing
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
		t.Fatal(err)
	}
	return l.Sessions
}
