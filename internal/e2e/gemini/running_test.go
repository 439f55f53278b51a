//go:build e2e

package gemini_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/sessions"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/tmuxterm"
)

// A Gemini CLI TUI a person runs in a tmux pane is listed as running there,
// and continuing its session is refused with the reason (parley does not
// type into Gemini's TUI, and a second Gemini on one session would fork it);
// once the person quits it, it continues.
func TestGeminiRunningInAPaneIsRefused(t *testing.T) {
	r := newRig(t)
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
	server := strings.TrimSpace(tm.Tmux("display-message", "-p", "#{socket_path}"))
	if want := "tmux:" + filepath.Base(server) + ":t:0.0"; !found.Running || found.Where != want || found.PID <= 0 {
		t.Fatalf("listed %+v, want running in %s", found, want)
	}

	s := r.dial(t, "phone")
	s.Send(map[string]any{"type": "resume_session", "agent": "gemini", "session_id": found.ID, "cwd": r.work})
	e := s.Get(s.WaitFor(0, wait, chatsock.Type(chat.TypeError), "the refusal"))
	msg := fmt.Sprint(chatsock.FieldOf(e, "message"))
	if chatsock.FieldOf(e, "code") != chat.CodeSessionRunning || !strings.Contains(msg, fmt.Sprintf("pid %d", found.PID)) || strings.Contains(msg, "watch") {
		t.Fatalf("refusal: %s, want code %s naming pid %d, offering no watching", e.Raw, chat.CodeSessionRunning, found.PID)
	}

	// Ctrl+C twice, each once the screen shows the last: /quit with Enter
	// can go to the command menu it opens instead.
	tm.Keys("C-c")
	tm.WaitScreen("Gemini asking to press again", tmuxterm.Has("Press Ctrl+C again to exit"))
	tm.Keys("C-c")
	tm.WaitScreen("Gemini gone", func(string) bool { _, ok := tm.ExitStatus(); return ok })
	at := s.Len()
	s.Send(map[string]any{"type": "resume_session", "agent": "gemini", "session_id": found.ID, "cwd": r.work})
	s.WaitFor(at, wait, chatsock.Field(chat.TypeSessionInfo, "state", "continued"), "continued once Gemini quit")
}

// prompt types text into Gemini CLI's input box and, once the box shows it,
// Enter: an Enter that comes with the text, as a paste, is taken for a new
// line in the box.
func prompt(tm *tmuxterm.Term, text string) {
	tm.T.Helper()
	tm.Tmux("send-keys", "-t", "t", "-l", text)
	tm.WaitScreen("the typed prompt", tmuxterm.Has("> "+text))
	tm.Keys("Enter")
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
