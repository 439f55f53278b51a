package acp

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A Gemini session whose chat file is named for the current minute is
// loaded only once that minute is over; one from an earlier minute at once.
func TestGeminiLoadWaitsOutTheChatsMinute(t *testing.T) {
	dir := t.TempDir()
	chats := filepath.Join(dir, "tmp", "work", "chats")
	if err := os.MkdirAll(chats, 0o755); err != nil {
		t.Fatal(err)
	}
	id := "8ce45fcf-5bea-4bd6-b332-0d448bc6cdcf"
	for _, name := range []string{"session-2026-12-06T16-39-8ce45fcf.jsonl", "session-2026-12-06T16-41-8ce45fcf.jsonl", "session-2026-12-06T16-45-0badc0de.jsonl"} {
		if err := os.WriteFile(filepath.Join(chats, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct {
		now  string
		want time.Duration
	}{
		{"2026-12-06T16:41:00Z", time.Minute},
		{"2026-12-06T16:41:45Z", 15 * time.Second},
		{"2026-12-06T16:42:00Z", 0},
		{"2026-12-07T09:00:00Z", 0},
	} {
		if got := geminiLoadWait(dir, id, at(c.now)); got != c.want {
			t.Errorf("at %s: wait %v, want %v", c.now, got, c.want)
		}
	}
	if got := geminiLoadWait(dir, "0badc0de-0000", at("2026-12-06T16:45:30Z")); got != 30*time.Second {
		t.Errorf("another session's file: wait %v, want 30s", got)
	}
	if got := geminiLoadWait(dir, "../*", at("2026-12-06T16:41:00Z")); got != 0 {
		t.Errorf("a bad id: wait %v", got)
	}
}
