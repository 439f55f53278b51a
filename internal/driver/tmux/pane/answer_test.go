package pane

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The stream-* captures are Claude Code 2.1.197 drawing answers as the model
// streams them (testdata/README.md): what Answer reads is the provisional
// text the tmux driver shows before the transcript has the final words.
func TestAnswerGoldens(t *testing.T) {
	t.Parallel()
	const (
		first  = "The first line of a slow answer, streamed in pieces."
		before = "Before the tool, some words streamed slowly."
		after  = "After the tool, more words that stream slowly to the end."
	)
	tests := []struct {
		name, prompt string
		want         []string
		finished, ok bool
	}{
		// The bullet with nothing after it, the spinner and the tip under
		// it are not words.
		{name: "stream-thinking", prompt: "slow", want: nil, ok: true},
		{name: "stream-first-line", prompt: "slow", want: []string{first}, ok: true},
		{name: "stream-middle", prompt: "slow", want: []string{first + "\n\nA second paragraph follows here, with bold and code, and it keeps going for a while so that it wraps around the width"}, ok: true},
		{name: "stream-done", prompt: "slow", want: []string{first + "\n\nA second paragraph follows here, with bold and code, and it keeps going for a while so that it wraps around the width\nof the pane at least once or twice.\n\n- item one\n- item two\n\nThe end."}, finished: true, ok: true},
		// The running tool's line (its bullet blinking off) and its
		// "⎿ Running…" are not the words before it.
		{name: "stream-tool-running", prompt: "tool", want: []string{before}, ok: true},
		{name: "stream-after-tool", prompt: "tool", want: []string{before}, ok: true},
		{name: "stream-after-tool-text", prompt: "tool", want: []string{before, after}, finished: true, ok: true},
		// Only the answer to the prompt asked: the earlier turns are above it.
		{name: "stream-after-tool-text", prompt: "", want: []string{before, after}, finished: true, ok: true},
		// "Thought for 1s" is thinking, not words.
		{name: "stream-thought", prompt: "think", want: nil, ok: true},
		{name: "stream-thought-done", prompt: "think", want: []string{"Thought through, the answer is 42."}, finished: true, ok: true},
		// A long answer pushed its prompt off the visible screen: nothing
		// on it can be placed in the turn.
		{name: "stream-scrolled", prompt: "long", want: nil, ok: false},
		// A prompt not on the screen at all.
		{name: "stream-done", prompt: "never asked", want: nil, ok: false},
		{name: "idle", prompt: "", want: nil, ok: false},
		{name: "reply", prompt: "hello", want: []string{"Hello from the stand-in."}, finished: true, ok: true},
		// A permission menu's "❯ 1. Yes" is no prompt, and the tool it asks
		// for is no words.
		{name: "perm-bash", prompt: "", want: []string{"Listing."}, ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/"+tt.prompt, func(t *testing.T) {
			got, finished, ok := Read(golden(t, tt.name)).Answer(tt.prompt)
			if ok != tt.ok || finished != tt.finished || !slices.Equal(got, tt.want) {
				t.Fatalf("Answer(%q) = %q, finished %v, %v; want %q, %v, %v", tt.prompt, got, finished, ok, tt.want, tt.finished, tt.ok)
			}
		})
	}
	// The whole history holds the scrolled answer's prompt and all 60 lines.
	got, _, ok := Read(golden(t, "stream-scrolled-history")).Answer("long")
	if !ok || len(got) != 1 || got[0][:46] != "Line 1 of a long answer that scrolls the pane." {
		t.Fatalf("the long answer from the history: %v %q", ok, got)
	}
}

func TestWords(t *testing.T) {
	t.Parallel()
	// What the pane draws of Markdown keeps the words of the source.
	if Words("A **bold** `code`, and\n- item one") != Words("A bold code, and\n  - item one") {
		t.Fatal("Markdown and its rendering differ in words")
	}
	if Words("Ünïcode 42!") != "ünïcode42" {
		t.Fatalf("Words = %q", Words("Ünïcode 42!"))
	}
}

// FuzzAnswer feeds captures and prompts to Answer: it never panics, and what
// it returns is words drawn above the input box, never the box, its status
// line or a block's bullet.
func FuzzAnswer(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "claude-2.1.197", "*.ansi"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no golden captures: %v", err)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		for _, prompt := range []string{"", "slow", "tool", "long", "hello"} {
			f.Add(string(b), prompt)
		}
	}
	f.Fuzz(func(t *testing.T, capture, prompt string) {
		s := Read(capture)
		blocks, finished, ok := s.Answer(prompt)
		if !ok && (len(blocks) > 0 || finished) {
			t.Fatalf("no prompt found, yet blocks %q (finished %v)", blocks, finished)
		}
		above := strings.Join(s.Above(), "\n")
		for _, b := range blocks {
			if strings.TrimSpace(b) == "" || strings.HasPrefix(b, "● ") {
				t.Fatalf("answer block %q", b)
			}
			for _, l := range strings.Split(b, "\n") {
				if l != "" && !strings.Contains(above, l) {
					t.Fatalf("answer line %q is not above the input box", l)
				}
			}
		}
	})
}
