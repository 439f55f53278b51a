//go:build e2e

package gemini_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/sessions"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
)

// terminal runs the real gemini as a person would in a shell in the rig's
// work directory (the agent's HOME and model API).
func (r *rig) terminal(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command(testkit.GeminiBin(t), args...)
	cmd.Dir = r.work
	cmd.Env = append(os.Environ(), r.env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gemini %q: %v\n%s", args, err, out)
	}
}

// listed is the one Gemini session GET /api/sessions lists.
func (r *rig) listed(t *testing.T) sessions.Session {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+r.d.Addr()+"/api/sessions?agent=gemini", nil)
	req.Header.Set("Authorization", "Bearer "+r.d.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var l sessions.Listing
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil || len(l.Sessions) != 1 {
		t.Fatalf("GET /api/sessions: %+v %v, want one Gemini session", l, err)
	}
	return l.Sessions[0]
}

// chatThisMinute names session id's one chat file for the current minute, as
// Gemini names the chat of a session started now, early enough in the minute
// (30 s left at least) for the next few seconds to stay in it. It answers
// the minute.
func (r *rig) chatThisMinute(t *testing.T, id string) string {
	t.Helper()
	if left := time.Until(time.Now().Truncate(time.Minute).Add(time.Minute)); left < 30*time.Second {
		time.Sleep(left)
	}
	files, _ := filepath.Glob(filepath.Join(r.home, ".gemini", "tmp", "*", "chats", "session-*-"+id[:8]+".jsonl"))
	if len(files) != 1 {
		t.Fatalf("Gemini's chat files of session %s: %q, want one", id, files)
	}
	minute := time.Now().UTC().Format("2006-01-02T15-04")
	if err := os.Rename(files[0], filepath.Join(filepath.Dir(files[0]), "session-"+minute+"-"+id[:8]+".jsonl")); err != nil {
		t.Fatal(err)
	}
	return minute
}

// A session Gemini CLI made itself (`gemini -p` in a directory, running a
// shell command) is found, continued in parley with its earlier turn
// imported once (its text and its tool call, ended), and the next message
// reaches the model with the whole conversation.
//
// It is continued in the minute its chat file is named for, as a session
// made a moment ago is: Gemini CLI 0.61.0's session/load then writes over
// that file before reading it (internal/driver/acp/gemini_load.go), which
// parley must keep from happening.
func TestContinueGeminiSessionImportsItsTurns(t *testing.T) {
	r := newRig(t)
	r.terminal(t, "--approval-mode", "yolo", "-p", "make the file")
	if _, err := os.Stat(filepath.Join(r.work, "made-by-gemini")); err != nil {
		t.Fatalf("the terminal's command did not run: %v", err)
	}
	found := r.listed(t)
	if found.Cwd != r.work || found.Title != "make the file" || found.Turns != 1 {
		t.Fatalf("listed %+v", found)
	}

	made := r.chatThisMinute(t, found.ID)

	s := r.dial(t, "phone")
	s.Send(map[string]any{"type": "resume_session", "agent": "gemini", "session_id": found.ID, "cwd": r.work, "ref": "c1"})
	at := s.WaitFor(0, wait, chatsock.Field(chat.TypeSessionInfo, "state", "continued"), "the session continued here")
	s.WaitFor(0, wait, chatsock.Field(chat.TypeDone, "ref", "c1"), "resume_session's done")
	var got []string
	var toolID string
	for _, e := range s.Snapshot()[:at] {
		switch e.Type {
		case chat.TypeUserMessage, chat.TypeAgentChunk:
			got = append(got, fmt.Sprintf("%s %v imported=%v", e.Type, chatsock.FieldOf(e, "text"), chatsock.FieldOf(e, "imported")))
		case chat.TypeToolCall:
			toolID, _ = chatsock.FieldOf(e, "tool_call_id").(string)
			got = append(got, fmt.Sprintf("%s %v %v imported=%v", e.Type, chatsock.FieldOf(e, "kind"), chatsock.FieldOf(e, "status"), chatsock.FieldOf(e, "imported")))
		case chat.TypeToolCallUpdate:
			if chatsock.FieldOf(e, "tool_call_id") != toolID || toolID == "" {
				t.Errorf("a result of another call: %s", e.Raw)
			}
			got = append(got, fmt.Sprintf("%s %v imported=%v", e.Type, chatsock.FieldOf(e, "status"), chatsock.FieldOf(e, "imported")))
		case chat.TypePermissionRequest, chat.TypeQuestion:
			t.Errorf("a card from the imported turns: %s", e.Raw)
		}
	}
	want := []string{
		"user_message make the file imported=true",
		"tool_call execute completed imported=true",
		"tool_call_update completed imported=true",
		"agent_chunk The command ran. imported=true",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("imported:\n got %q\nwant %q\n%s", got, want, chatsock.Summary(s.Snapshot()))
	}

	// The next message goes to Gemini with its whole memory, and the
	// session/load replay is not shown a second time.
	t.Logf("made in minute %s, continued in %s", made, time.Now().UTC().Format("2006-01-02T15-04"))
	s.Send(chatsock.Msg("m1", "hello"))
	end := s.WaitFor(at, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "the turn on the continued session")
	if got := chatsock.Chunks(s.Snapshot()[at:end]); got != answer {
		t.Errorf("answer %q, want %q", got, answer)
	}
	// The model's request holds the terminal's turn, and the thread says
	// nothing of a lost history.
	reqs := r.api.ScenarioRequests()
	texts := reqs[len(reqs)-1].UserTexts()
	remembered := slices.Contains(texts, "make the file") && texts[len(texts)-1] == "hello"
	told := false
	for _, e := range s.Snapshot()[at:end] {
		told = told || e.Type == chat.TypeError && chatsock.FieldOf(e, "code") == chat.CodeNoHistory
	}
	if !remembered || told {
		var all []string
		for i, rq := range reqs {
			all = append(all, fmt.Sprintf("request %d: %q", i, rq.UserTexts()))
		}
		var files []string
		filepath.WalkDir(filepath.Join(r.home, ".gemini"), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				b, _ := os.ReadFile(p)
				files = append(files, fmt.Sprintf("%s (%d bytes): %.400s", p, len(b), b))
			}
			return nil
		})
		t.Errorf("remembered %v, told the history was lost %v (made in minute %s): want remembered, not told; the last request's user texts %q; every request:\n%s\nGemini's files:\n%s\n%s",
			remembered, told, made, texts, strings.Join(all, "\n"), strings.Join(files, "\n"), chatsock.Summary(s.Snapshot()))
	}
	n := 0
	for _, e := range s.Snapshot() {
		if e.Type == chat.TypeUserMessage && chatsock.FieldOf(e, "text") == "make the file" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the terminal's prompt is in the thread %d times, want once", n)
	}
}
