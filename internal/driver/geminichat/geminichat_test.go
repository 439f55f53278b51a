package geminichat

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The session's chat is the largest file whose header names it: not the
// stub a later resume leaves with the same short id, not another session's
// with the same short id, not a sub-agent's.
func TestFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	id := "4bd0e461-62fb-40d7-a417-8a4a8878cce4"
	chats := filepath.Join(dir, "tmp", "work", "chats")
	if err := os.MkdirAll(chats, 0o700); err != nil {
		t.Fatal(err)
	}
	header := `{"sessionId":"` + id + `","kind":"main"}` + "\n"
	write := func(name, body string) string {
		p := filepath.Join(chats, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	msg := `{"id":"m1","type":"user","content":[{"text":"hello"}]}` + "\n"
	real := write("session-2026-12-06T20-12-4bd0e461.jsonl", header+strings.Repeat(msg, 100))
	write("session-2026-12-06T21-40-4bd0e461.jsonl", header+`{"$set":{"messages":[]}}`+"\n")
	write("session-2026-12-06T21-41-4bd0e461.jsonl", `{"sessionId":"4bd0e461-0000-0000-0000-000000000000","kind":"main"}`+"\n"+strings.Repeat("{}\n", 5000))
	write("session-2026-12-06T21-42-4bd0e461.jsonl", `{"sessionId":"`+id+`","kind":"subagent"}`+"\n"+strings.Repeat("{}\n", 5000))
	got, err := File(dir, id)
	if err != nil || got != real {
		t.Fatalf("File = %q, %v; want %q", got, err, real)
	}
	if _, err := File(dir, "../../x"); !errors.Is(err, ErrBadID) {
		t.Errorf("a path for a session id: %v, want ErrBadID", err)
	}
	if _, err := File(dir, "00000000-62fb-40d7-a417-8a4a8878cce4"); !errors.Is(err, ErrNoChat) {
		t.Errorf("a session without a chat: %v, want ErrNoChat", err)
	}
}

// A message's content is a string or parts; a person's prompt is not the
// <session_context> Gemini CLI adds.
func TestTextAndPrompt(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		raw, text string
		person    bool
	}{
		{`"  hello  "`, "hello", true},
		{`[{"text":"first"},{"text":" "},{"text":"second"}]`, "first\n\nsecond", true},
		{`[{"text":"<session_context>\nThis is the Gemini CLI."}]`, "<session_context>\nThis is the Gemini CLI.", false},
		{`[{"functionResponse":{}}]`, "", false},
		{`{"not":"content"}`, "", false},
		{`null`, "", false},
	} {
		if got := Text(json.RawMessage(c.raw)); got != c.text {
			t.Errorf("Text(%s) = %q, want %q", c.raw, got, c.text)
		}
		if got, ok := Prompt(json.RawMessage(c.raw)); got != c.text || ok != c.person {
			t.Errorf("Prompt(%s) = %q, %v; want %q, %v", c.raw, got, ok, c.text, c.person)
		}
	}
}
