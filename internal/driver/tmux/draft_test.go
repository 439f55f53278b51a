package tmux

import (
	"testing"

	"github.com/parleyhq/parley/internal/driver/tmux/pane"
)

// What of the pane's answer is provisional: the blocks after as many as the
// transcript gave, less any whose words the final ones already hold.
func TestDraftTextLeavesTheFinalWordsOut(t *testing.T) {
	t.Parallel()
	final := func(texts ...string) *drafts {
		d := &drafts{}
		for _, s := range texts {
			d.finals = append(d.finals, pane.Words(s))
		}
		return d
	}
	tests := []struct {
		name   string
		d      *drafts
		blocks []string
		want   string
	}{
		{"nothing final yet", final(), []string{"The first line", "Second"}, "The first line\n\nSecond"},
		{"the first block is final", final("The **first** line."), []string{"The first line.", "Second"}, "Second"},
		{"all final", final("A", "B"), []string{"A", "B"}, ""},
		{"the pane shows fewer blocks than the transcript gave", final("A", "B"), []string{"A"}, ""},
		// A tool line taken for words shifts the count: the final block's
		// words are still never sent again.
		{"a block the final words hold", final("The answer, written whole."), []string{"Bash(ls)", "The answer, written whole."}, ""},
		{"a block drawn twice", final("Hello there."), []string{"Hello there.", "Hello there.", "More"}, "More"},
	}
	for _, tt := range tests {
		if got := tt.d.text(tt.blocks); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}
