package pane

import (
	"slices"
	"strings"
	"testing"
)

// Gemini's tool confirmations, read from its real screens as the menus a
// card is made of: the tool, what it will do, the question, the options with
// their digits and which is selected. The option that opens an editor is the
// terminal's; the "(esc)" of a label is its key, not its words.
func TestReadGeminiDialogs(t *testing.T) {
	t.Parallel()
	shellOptions := []string{"Allow once", "Allow for this session", "No, suggest changes"}
	tests := []struct {
		name     string
		title    string
		detail   []string
		question string
		options  []string
		terminal int // the number of the terminal-only option, 0 for none
		cursor   int
	}{
		{name: "shell-confirm", title: "Shell", detail: []string{"touch zz"}, question: "Allow execution of [Shell]?", options: shellOptions, cursor: 1},
		{name: "shell-confirm-cursor", title: "Shell", detail: []string{"touch zz"}, question: "Allow execution of [Shell]?", options: shellOptions, cursor: 2},
		{name: "shell-compound", title: "Shell", detail: []string{"echo one && echo two"}, question: "Allow execution of [Shell]?", options: shellOptions, cursor: 1},
		{name: "edit-confirm", title: "WriteFile", detail: []string{"Writing to notes.txt", "1 hello notes", "2 second line"}, question: "Apply this change?",
			options: []string{"Allow once", "Allow for this session", "Modify with external editor", "No, suggest changes"}, terminal: 3, cursor: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := ReadAs(GeminiCLI, geminiGolden(t, tt.name))
			m, live, why := s.Menu()
			if !live {
				t.Fatalf("no menu (%s) in\n%s", why, joinLines(s.Lines))
			}
			if m.Kind != MenuPermission || m.Title != tt.title || !slices.Equal(m.Detail, tt.detail) || m.Question != tt.question {
				t.Errorf("menu %q %q %q %q, want %q %q %q %q", m.Kind, m.Title, m.Detail, m.Question, MenuPermission, tt.title, tt.detail, tt.question)
			}
			var labels []string
			for i, o := range m.Options {
				labels = append(labels, o.Label)
				if o.Number != i+1 || o.Terminal != (o.Number == tt.terminal) {
					t.Errorf("option %d: %+v", i+1, o)
				}
			}
			if !slices.Equal(labels, tt.options) || m.Cursor != tt.cursor {
				t.Errorf("options %q cursor %d, want %q cursor %d", labels, m.Cursor, tt.options, tt.cursor)
			}
			if got := s.Full[m.First]; !strings.Contains(got, "1. Allow once") {
				t.Errorf("First is line %q", got)
			}
			if got := s.Full[m.Last]; !strings.Contains(got, tt.options[len(tt.options)-1]) {
				t.Errorf("Last is line %q", got)
			}
		})
	}
}

// Once answered (allowed, or rejected and cancelled) the dialog is gone: the
// box is back and no menu is read, nor from the screens with a box, nor from
// the numbered tips Gemini shows at its start.
func TestGeminiDialogAnswered(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"shell-answered", "edit-rejected", "idle", "cancelled"} {
		s := ReadAs(GeminiCLI, geminiGolden(t, name))
		if m, live, why := s.Menu(); live || why == "" || !s.HasBox() {
			t.Errorf("%s: menu %+v live %v (%s), box %v", name, m, live, why, s.HasBox())
		}
	}
}
