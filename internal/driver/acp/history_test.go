package acp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/driver"
)

// A Gemini CLI chat as 0.61.0 writes it: a header, the hidden context
// message, the person's prompt, the answer with its tool call (written again,
// same id, when the call ended), the answer after it. A resume in a later
// minute leaves a stub with the same short id: the full chat is the session.
func TestGeminiHistory(t *testing.T) {
	const id = "425d71ac-9f77-4cee-9f67-09246e11675d"
	home := t.TempDir()
	chats := filepath.Join(home, ".gemini", "tmp", "app", "chats")
	if err := os.MkdirAll(chats, 0o700); err != nil {
		t.Fatal(err)
	}
	full := []string{
		`{"sessionId":"` + id + `","projectHash":"x","startTime":"2026-12-06T10:54:36.621Z","lastUpdated":"2026-12-06T10:54:36.621Z","kind":"main"}`,
		`{"$set":{"messages":[{"id":"c0","timestamp":"2026-12-06T10:54:36.622Z","type":"user","content":[{"text":"<session_context>\nThis is the Gemini CLI."}]}]}}`,
		`{"id":"u1","timestamp":"2026-12-06T10:54:36.865Z","type":"user","content":[{"text":"make the file"}]}`,
		`{"$set":{"lastUpdated":"2026-12-06T10:54:36.865Z"}}`,
		`{"id":"g1","timestamp":"2026-12-06T10:54:37.000Z","type":"gemini","content":"","toolCalls":[{"id":"call-1","name":"run_shell_command","args":{"command":"touch f"},"status":"executing"}],"model":"m"}`,
		`{"id":"g1","timestamp":"2026-12-06T10:54:37.000Z","type":"gemini","content":"","toolCalls":[{"id":"call-1","name":"run_shell_command","args":{"command":"touch f"},"status":"success","displayName":"Shell","description":"touch f","result":[{"functionResponse":{"id":"call-1","name":"run_shell_command","response":{"output":"made"}}}]}],"model":"m"}`,
		`{"id":"g2","timestamp":"2026-12-06T10:54:38.000Z","type":"gemini","content":"The command ran.","model":"m"}`,
		`{"id":"u2","timestamp":"2026-12-06T10:5`,
	}
	stub := []string{
		`{"sessionId":"` + id + `","projectHash":"x","startTime":"2026-12-06T11:00:00.000Z","kind":"main"}`,
		`{"$set":{"messages":[{"id":"c9","type":"user","content":[{"text":"<session_context>"}]}]}}`,
	}
	other := []string{`{"sessionId":"425d71ac-0000-0000-0000-000000000000","kind":"main"}`, `{"id":"x","type":"user","content":"not this one"}`}
	for name, lines := range map[string][]string{
		"session-2026-12-06T10-54-425d71ac.jsonl": full,
		"session-2026-12-06T11-00-425d71ac.jsonl": stub,
		"session-2026-12-06T12-00-425d71ac.jsonl": other,
	} {
		if err := os.WriteFile(filepath.Join(chats, name), []byte(strings.Join(lines, "\n")), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	turns, err := (&Driver{}).History(t.Context(), driver.Spec{AgentID: "gemini", Command: "/x/gemini", Env: []string{"HOME=" + home}, ResumeID: id})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tn := range turns {
		line := tn.Role + ":" + tn.Text + "@" + tn.ID
		if tn.Tool != nil {
			line = tn.Role + ":" + tn.Tool.ToolCallID + " " + tn.Tool.Title + " " + tn.Tool.Kind + " " + tn.Tool.Status + " " + tn.Result.Output + "@" + tn.ID
		}
		got = append(got, line)
	}
	want := []string{"user:make the file@u1", "tool:call-1 touch f execute completed made@g1", "agent:The command ran.@g2"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("turns:\n got %q\nwant %q", got, want)
	}

	if _, err := (&Driver{}).History(t.Context(), driver.Spec{Command: "/x/gemini", Env: []string{"HOME=" + home}, ResumeID: "00000000-0000-0000-0000-000000000000"}); err == nil {
		t.Error("a session Gemini has no chat of: no error")
	}
	if _, err := (&Driver{}).History(t.Context(), driver.Spec{Command: "/x/opencode", ResumeID: id}); err == nil {
		t.Error("an agent whose record parley does not read: no error")
	}
}
