package render

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestChunk(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		in    string
		limit int
		want  []string
	}{
		{"short", "hello", 10, []string{"hello"}},
		{"at a space", "hello brave new world", 11, []string{"hello brave", "new world"}},
		{"at a newline", "one two\nthree four", 12, []string{"one two", "three four"}},
		{"no break", "abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		{"runes kept whole", "ééééé", 5, []string{"éé", "éé", "é"}},
		{"empty", "", 5, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Chunk(tt.in, tt.limit)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			for _, p := range got {
				if len(p) > tt.limit || !utf8.ValidString(p) {
					t.Errorf("piece %q: over the limit %d or not UTF-8", p, tt.limit)
				}
			}
		})
	}
}

func TestLinesHaveNoNewline(t *testing.T) {
	t.Parallel()
	for _, l := range Lines("a\nbb\n\nccc ddd", 4) {
		if strings.Contains(l, "\n") || len(l) > 4 {
			t.Errorf("line %q: has a newline or is over 4 bytes", l)
		}
	}
}

func TestStreamerSendOnce(t *testing.T) {
	t.Parallel()
	s := Streamer{Limit: 10}
	now := time.Unix(0, 0)
	if out := s.Add("hel", now); len(out.Send) != 0 {
		t.Errorf("partial line: got %q, want nothing yet", out.Send)
	}
	out := s.Add("lo\nwor", now)
	if strings.Join(out.Send, "|") != "hello" {
		t.Errorf("whole line: got %q, want [hello]", out.Send)
	}
	out = s.End()
	if strings.Join(out.Send, "|") != "wor" {
		t.Errorf("end: got %q, want [wor]", out.Send)
	}
}

func TestStreamerEditThrottled(t *testing.T) {
	t.Parallel()
	s := Streamer{Limit: 100, Interval: time.Second, Edit: true}
	t0 := time.Unix(100, 0)
	if out := s.Add("a", t0); out.Replace != "a" {
		t.Errorf("first edit: got %q, want a", out.Replace)
	}
	if out := s.Add("b", t0.Add(100*time.Millisecond)); out.Replace != "" {
		t.Errorf("within the interval: got %q, want no edit", out.Replace)
	}
	if out := s.Add("c", t0.Add(1100*time.Millisecond)); out.Replace != "abc" {
		t.Errorf("after the interval: got %q, want abc", out.Replace)
	}
}

func TestStreamerEditHeldThenFlushed(t *testing.T) {
	t.Parallel()
	s := Streamer{Limit: 100, Interval: time.Second, Edit: true}
	t0 := time.Unix(100, 0)
	s.Add("a", t0)
	if held, _ := s.Held(); held {
		t.Errorf("after a shown edit: held, want nothing held")
	}
	if out := s.Flush(t0.Add(10 * time.Millisecond)); out.Replace != "" || len(out.Send) != 0 {
		t.Errorf("flush with nothing held: got %+v, want nothing", out)
	}
	s.Add("b", t0.Add(100*time.Millisecond))
	held, at := s.Held()
	if !held || !at.Equal(t0.Add(time.Second)) {
		t.Errorf("a chunk inside the interval: held %v at %v, want held until %v", held, at, t0.Add(time.Second))
	}
	if out := s.Flush(t0.Add(time.Second)); out.Replace != "ab" {
		t.Errorf("flush: got %q, want ab", out.Replace)
	}
	if held, _ := s.Held(); held {
		t.Errorf("after the flush: still held")
	}
	// The flush counts as an edit: the next chunk inside its interval waits.
	if out := s.Add("c", t0.Add(1500*time.Millisecond)); out.Replace != "" {
		t.Errorf("within the flush's interval: got %q, want no edit", out.Replace)
	}
	if out := s.End(); out.Replace != "abc" {
		t.Errorf("end: got %q, want abc", out.Replace)
	}
	if held, _ := s.Held(); held {
		t.Errorf("after the end: still held")
	}
}

func TestStreamerEditSplitsLongAnswers(t *testing.T) {
	t.Parallel()
	s := Streamer{Limit: 20, Interval: time.Second, Edit: true}
	t0 := time.Unix(100, 0)
	words := strings.Repeat("word ", 30) // 150 bytes
	var sent []string
	var open string
	for i, w := range strings.SplitAfter(words, " ") {
		out := s.Add(w, t0.Add(time.Duration(i)*2*time.Second))
		sent = append(sent, out.Send...)
		if out.Replace != "" {
			open = out.Replace
		}
	}
	out := s.End()
	sent = append(sent, out.Send...)
	if out.Replace != "" {
		open = out.Replace
	}
	sent = append(sent, open)
	for _, m := range sent {
		if len(m) > 20 {
			t.Errorf("message of %d bytes, over the limit: %q", len(m), m)
		}
	}
	if got, want := strings.Join(strings.Fields(strings.Join(sent, " ")), " "), strings.TrimSpace(words); got != want {
		t.Errorf("the messages hold %q, want %q", got, want)
	}
}

func TestToolLineAndCard(t *testing.T) {
	t.Parallel()
	got := ToolLine("Bash", "execute", "completed", json.RawMessage(`{"command":"ls -la\n /tmp"}`), 0)
	if got != "⚙ Bash: ls -la /tmp (completed)" {
		t.Errorf("tool line: got %q", got)
	}
	if got := ToolLine(strings.Repeat("x", 50), "", "", nil, 20); len(got) > 20 {
		t.Errorf("tool line over 20 bytes: %q", got)
	}
	card := Card("Run Bash?", []string{"Allow", "Reject"})
	if !strings.Contains(card, "1. Allow") || !strings.Contains(card, "2. Reject") {
		t.Errorf("card: got %q", card)
	}
	if i, ok := Choice(" 2 ", 2); !ok || i != 1 {
		t.Errorf("choice 2: got %d %v, want 1 true", i, ok)
	}
	if _, ok := Choice("3", 2); ok {
		t.Errorf("choice 3 of 2: got ok")
	}
}

func TestStreamerWhole(t *testing.T) {
	t.Parallel()
	s := Streamer{Limit: 12, Whole: true}
	now := time.Unix(0, 0)
	if out := s.Add("one\ntwo", now); len(out.Send) != 0 {
		t.Errorf("within the limit: got %q, want nothing yet", out.Send)
	}
	out := s.Add(" three four", now)
	if strings.Join(out.Send, "|") != "one|two three" {
		t.Errorf("over the limit: got %q, want [one, two three]", out.Send)
	}
	if out := s.End(); strings.Join(out.Send, "|") != "four" {
		t.Errorf("end: got %q, want [four]", out.Send)
	}
}

// TestChunkBytesNotUTF8: a run of bytes where no rune starts within the limit
// is cut at the limit (it looped forever), every byte kept.
func TestChunkBytesNotUTF8(t *testing.T) {
	t.Parallel()
	in := strings.Repeat("\x80", 10)
	got := Chunk(in, 4)
	if strings.Join(got, "") != in || len(got) != 3 {
		t.Errorf("got %q, want %q in 3 pieces", got, in)
	}
}
