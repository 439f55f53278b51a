package pane

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The captures in testdata/gemini-0.61.0 were taken with `tmux capture-pane
// -p -e` from Gemini CLI 0.61.0 in an 80×24 tmux 3.3a pane, driven by the
// scripted model API (internal/testkit/geminiapi); see testdata/README.md.
func geminiGolden(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "gemini-0.61.0", name+".ansi"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// What the tmux driver's send rests on, read from Gemini's real screens:
// the box and its text (the placeholder is no text), the prompts submitted
// above it, and whether a turn runs (text typed then goes to no prompt).
func TestReadGeminiGoldens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		staged  string
		prompts []string
		working bool
		done    bool // GeminiTurnDone
	}{
		{name: "idle", staged: "", done: true},
		{name: "typed", staged: "first prompt here", done: true},
		{name: "answered", staged: "", prompts: []string{"first prompt here"}, done: true},
		// An Enter that came with the text (within Gemini's 30 ms) was no
		// submit: the text stays in the box, nothing above it.
		{name: "enter-glued", staged: "glued enter", prompts: []string{"first prompt here"}, done: true},
		{name: "busy", staged: "", prompts: []string{"first prompt here", "slow one"}, working: true},
		{name: "busy-typed", staged: "queued text", prompts: []string{"first prompt here", "slow one"}, working: true},
		{name: "after-slow", staged: "queued text", prompts: []string{"first prompt here", "slow one"}, done: true},
		// Text, an Enter with it (a new line in the box), more text.
		{name: "multiline", staged: "line one\nline two", prompts: []string{"first prompt here", "slow one"}, done: true},
		{name: "line-cleared", staged: "line one", prompts: []string{"first prompt here", "slow one"}, done: true},
		{name: "cancelled", staged: "", prompts: []string{"run it"}, done: true},
		// A long text wraps in the box, its further lines indented.
		{name: "long-typed", staged: "worda wordb wordc wordd worde wordf wordg wordh wordi wordj wordk wordl\nwordm wordn wordo wordp wordq wordr words wordt wordu wordv wordw wordx\nwordy wordz worda wordb wordc wordd", prompts: []string{"run it"}, done: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := ReadAs(GeminiCLI, geminiGolden(t, tt.name))
			if !s.HasBox() {
				t.Fatalf("no input box in\n%s", joinLines(s.Lines))
			}
			if got := s.Staged(); got != tt.staged {
				t.Errorf("Staged: got %q, want %q", got, tt.staged)
			}
			if got := s.Prompts(); !slices.Equal(got, tt.prompts) {
				t.Errorf("Prompts: got %q, want %q", got, tt.prompts)
			}
			if got := s.Working(); got != tt.working {
				t.Errorf("Working: got %v, want %v", got, tt.working)
			}
			if got := s.GeminiTurnDone(); got != tt.done {
				t.Errorf("GeminiTurnDone: got %v, want %v", got, tt.done)
			}
			if _, live, _ := s.Menu(); live {
				t.Error("a live menu with Gemini's input box up")
			}
			for _, p := range tt.prompts {
				if s.CountSubmitted(p) != 1 {
					t.Errorf("CountSubmitted(%q) = %d, want 1", p, s.CountSubmitted(p))
				}
			}
			if tt.staged != "" && (!s.InBox(tt.staged) || !s.BoxHolds(tt.staged)) {
				t.Errorf("InBox/BoxHolds(%q) false", tt.staged)
			}
		})
	}
}

// Gemini's tool confirmation holds the keyboard: no box, so nothing is typed
// (the dialog is read as a menu: TestReadGeminiDialogs).
func TestGeminiDialogHasNoBox(t *testing.T) {
	t.Parallel()
	s := ReadAs(GeminiCLI, geminiGolden(t, "shell-confirm"))
	if s.HasBox() || s.Staged() != "" || s.Working() || s.GeminiTurnDone() {
		t.Fatalf("box %v staged %q working %v on the confirmation", s.HasBox(), s.Staged(), s.Working())
	}
	if got := s.Prompts(); !slices.Equal(got, []string{"run it"}) {
		t.Errorf("Prompts: got %q", got)
	}
}

// Claude Code's reader finds no box on Gemini's screen, nor Gemini's on
// Claude Code's: a pane read in the wrong dialect is never typed into.
func TestDialectsDoNotReadEachOther(t *testing.T) {
	t.Parallel()
	if s := Read(geminiGolden(t, "typed")); s.HasBox() {
		t.Errorf("Claude Code's reader found a box on Gemini's screen: staged %q", s.Staged())
	}
	if s := ReadAs(GeminiCLI, golden(t, "staged")); s.HasBox() {
		t.Errorf("Gemini's reader found a box on Claude Code's screen: staged %q", s.Staged())
	}
}

func joinLines(l []string) string {
	out := ""
	for i, s := range l {
		out += string(rune('0'+i%10)) + "|" + s + "\n"
	}
	return out
}

// FuzzGemini feeds Gemini's captures (and testdata/fuzz/FuzzGemini) to its
// reader: it must never panic, and what it reports must hang together.
func FuzzGemini(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "gemini-0.61.0", "*.ansi"))
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
		s := ReadAs(GeminiCLI, capture)
		if len(s.Lines) != len(s.Full) {
			t.Fatalf("Lines and Full differ in length: %d vs %d", len(s.Lines), len(s.Full))
		}
		if s.HasBox() != (s.BoxBottom >= 0) || s.HasBox() && !(s.BoxTop < s.BoxBottom && s.BoxBottom < len(s.Lines)) {
			t.Fatalf("box %d-%d outside %d lines", s.BoxTop, s.BoxBottom, len(s.Lines))
		}
		staged := s.Staged()
		if !s.HasBox() && (staged != "" || s.Working()) {
			t.Fatalf("no box, yet staged %q or working", staged)
		}
		if staged != "" && !s.BoxHolds(staged) {
			t.Fatalf("the box does not hold its own text %q", staged)
		}
		for _, p := range s.Prompts() {
			if p == "" || s.CountSubmitted(p) < 1 {
				t.Fatalf("prompt %q not counted", p)
			}
		}
		m, live, why := s.Menu()
		menuHangsTogether(t, s, m, live, why)
		if live && (s.HasBox() || m.Kind != MenuPermission || m.Title == "" || m.Question == "") {
			t.Fatalf("a menu %+v with box %v", m, s.HasBox())
		}
	})
}
