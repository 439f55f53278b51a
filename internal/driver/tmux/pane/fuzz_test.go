package pane

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzMenu feeds captures (the goldens and testdata/fuzz/FuzzMenu) to the
// readers: they must never panic, and what they report must hang together.
func FuzzMenu(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "claude-2.1.197", "*.ansi"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no golden captures: %v", err)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, capture string) {
		s := Read(capture)
		if len(s.Lines) != len(s.Full) {
			t.Fatalf("Lines and Full differ in length: %d vs %d", len(s.Lines), len(s.Full))
		}
		if s.HasBox() && !(s.BoxTop < s.BoxBottom && s.BoxBottom < len(s.Lines)) {
			t.Fatalf("box %d-%d outside %d lines", s.BoxTop, s.BoxBottom, len(s.Lines))
		}
		_ = s.Staged()
		_ = s.Prompts()
		_ = s.LastSpeaker()
		if blocks, _, ok := s.Answer(""); !ok && len(blocks) > 0 {
			t.Fatal("an answer without its prompt")
		} else {
			for _, b := range blocks {
				if b == "" || strings.HasPrefix(b, "● ") {
					t.Fatalf("answer block %q", b)
				}
			}
		}
		m, live, why := s.Menu()
		menuHangsTogether(t, s, m, live, why)
		if !live {
			return
		}
		if n := Normalize(capture); Normalize(n) != n {
			t.Fatal("Normalize is not idempotent")
		}
	})
}

// menuHangsTogether checks what Menu reported of s: a reason when there is no
// menu; else its lines on the screen, its options numbered 1…n, its cursor on one.
func menuHangsTogether(t *testing.T, s *Screen, m Menu, live bool, why string) {
	t.Helper()
	if !live {
		if why == "" {
			t.Fatal("no live menu and no reason")
		}
		return
	}
	if m.First > m.Last || m.Last >= len(s.Full) {
		t.Fatalf("menu lines %d-%d outside %d lines", m.First, m.Last, len(s.Full))
	}
	for i, o := range m.Options {
		if o.Number != i+1 {
			t.Fatalf("option %d numbered %d", i+1, o.Number)
		}
	}
	if m.Cursor < 0 || m.Cursor > len(m.Options) {
		t.Fatalf("cursor %d outside %d options", m.Cursor, len(m.Options))
	}
}
