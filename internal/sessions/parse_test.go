package sessions

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/testkit"
)

// The session files the real programs wrote (captured by the *IsFound tests
// with PARLEY_CAPTURE=1) read as what each program showed.
func TestGoldenSessionFiles(t *testing.T) {
	for _, c := range []struct {
		file  string
		read  func(*bytes.Reader) (Session, error)
		id    string
		turns int
		title string
	}{
		{"codex-acp-0.16.0-acp.jsonl", func(r *bytes.Reader) (Session, error) { return readCodex("", r) },
			"01a24afe-0653-7130-8170-4291fb882f44", 1, "first prompt here"},
		{"gemini-" + testkit.GeminiVersion + "-print.jsonl", func(r *bytes.Reader) (Session, error) { return readGemini(r) },
			"425d71ac-9f77-4cee-9f67-09246e11675d", 1, "first prompt here"},
		{"claude-" + testkit.ClaudeVersion + "-print.jsonl", func(r *bytes.Reader) (Session, error) { return readClaude(goldenID, r) },
			goldenID, 1, "first prompt here"},
		// The TUI asked the model for a title: Claude Code's own title wins.
		{"claude-" + testkit.ClaudeVersion + "-tui.jsonl", func(r *bytes.Reader) (Session, error) { return readClaude("tui", r) },
			"tui", 1, "Stand-in session"},
	} {
		t.Run(c.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			s, err := c.read(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			if s.ID != c.id || s.Title != c.title || s.Turns != c.turns || s.UpdatedAt.IsZero() {
				t.Fatalf("read %+v", s)
			}
			// Cut anywhere, it reads without error and never more turns.
			for _, n := range []int{0, 1, len(b) / 3, len(b) / 2, len(b) - 2} {
				p, err := c.read(bytes.NewReader(b[:n]))
				if err != nil || p.Turns > s.Turns {
					t.Errorf("cut at %d: %+v %v", n, p, err)
				}
			}
		})
	}
}

// fuzzRead checks what every parser promises of any input: no panic, no
// error from a reader that has the bytes, a title of one short line.
func fuzzRead(f *testing.F, golden string, read func(*bytes.Reader) (Session, error)) {
	if b, err := os.ReadFile(filepath.Join("testdata", golden)); err == nil {
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Add([]byte("{}\n{\"type\":\"user\"}\n\x00\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := read(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if s.Turns < 0 || utf8.RuneCountInString(s.Title) > titleRunes || strings.ContainsAny(s.Title, "\n\r\t") {
			t.Fatalf("read %+v", s)
		}
	})
}

func FuzzReadClaude(f *testing.F) {
	fuzzRead(f, "claude-"+testkit.ClaudeVersion+"-print.jsonl", func(r *bytes.Reader) (Session, error) { return readClaude("x", r) })
}

func FuzzReadCodex(f *testing.F) {
	fuzzRead(f, "codex-acp-0.16.0-acp.jsonl", func(r *bytes.Reader) (Session, error) { return readCodex("", r) })
}

func FuzzReadGemini(f *testing.F) {
	fuzzRead(f, "gemini-"+testkit.GeminiVersion+"-print.jsonl", func(r *bytes.Reader) (Session, error) { return readGemini(r) })
}
