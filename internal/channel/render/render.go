// Package render is what IM plugins share to show a conversation on a chat
// platform: chunking text to the platform's size limit, streaming by throttled
// edits where messages can be edited and by whole messages where they cannot,
// tool calls as one line, and cards as numbered options answered by a number.
package render

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Chunk splits text into pieces of at most limit bytes, each valid UTF-8,
// breaking at a newline, else at a space, else between runes. Line breaks that
// end a piece are dropped; empty pieces are not returned.
func Chunk(text string, limit int) []string {
	if limit < utf8.UTFMax {
		limit = utf8.UTFMax
	}
	var out []string
	for len(text) > 0 {
		if len(text) <= limit {
			out = appendPiece(out, text)
			break
		}
		cut := limit
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		if cut == 0 { // no rune starts within the limit (bytes that are not UTF-8)
			cut = limit
		}
		head := text[:cut]
		if c := text[cut]; c == ' ' || c == '\n' {
			// the piece ends at a break already
		} else if i := strings.LastIndexByte(head, '\n'); i > 0 {
			cut = i
		} else if i := strings.LastIndexByte(head, ' '); i > 0 {
			cut = i
		}
		out = appendPiece(out, text[:cut])
		text = text[cut:]
		text = strings.TrimPrefix(text, "\n")
		text = strings.TrimPrefix(text, " ")
	}
	return out
}

func appendPiece(out []string, s string) []string {
	s = strings.TrimRight(s, "\n")
	if strings.TrimSpace(s) == "" {
		return out
	}
	return append(out, s)
}

// Lines splits text for line-based platforms (IRC): every line of text is
// chunked on its own, so no piece holds a newline.
func Lines(text string, limit int) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		out = append(out, Chunk(l, limit)...)
	}
	return out
}

// Streamer turns streamed chunks into what a platform can show. With Edit set
// (the platform edits messages) Flush says to rewrite the open message at most
// every Interval; without, it waits for whole lines (or the limit) and says to
// send them once.
type Streamer struct {
	Limit    int
	Interval time.Duration
	Edit     bool
	// Whole (without Edit) keeps the answer in one message as long as it fits
	// the limit, for platforms whose messages hold many lines (XMPP).
	Whole bool

	buf      strings.Builder
	lastEdit time.Time
	// held: with Edit, text was added that the open message does not show yet.
	held bool
}

// Output is what to do now: Send these new messages, or Replace the open one.
type Output struct {
	Send    []string
	Replace string
}

// Add appends a chunk and returns what may be shown at now.
func (s *Streamer) Add(text string, now time.Time) Output {
	s.buf.WriteString(text)
	if s.Edit {
		if now.Sub(s.lastEdit) < s.Interval {
			s.held = s.held || text != ""
			return Output{}
		}
		out := s.editable()
		if out.Replace != "" || len(out.Send) > 0 {
			s.lastEdit = now // an empty chunk does not use up the interval
		}
		return out
	}
	b := s.buf.String()
	if s.Whole {
		if len(b) <= s.Limit {
			return Output{}
		}
		pieces := Chunk(b, s.Limit)
		s.buf.Reset()
		s.buf.WriteString(pieces[len(pieces)-1])
		return Output{Send: pieces[:len(pieces)-1]}
	}
	i := strings.LastIndexByte(b, '\n')
	if i < 0 && len(b) < s.Limit {
		return Output{}
	}
	if i < 0 {
		pieces := Chunk(b, s.Limit)
		last := pieces[len(pieces)-1]
		s.buf.Reset()
		s.buf.WriteString(last)
		return Output{Send: pieces[:len(pieces)-1]}
	}
	s.buf.Reset()
	s.buf.WriteString(b[i+1:])
	return Output{Send: Lines(b[:i], s.Limit)}
}

// Held says, with Edit, whether text was added that is not shown yet (the
// throttle held it back), and when it may be shown: the time of the last edit
// plus Interval.
func (s *Streamer) Held() (held bool, at time.Time) {
	return s.Edit && s.held, s.lastEdit.Add(s.Interval)
}

// Flush returns, with Edit, the text the throttle held back, to show at now
// (a rewrite of the open message counted as an edit); nothing when none is
// held. The turn goes on: use End at its end.
func (s *Streamer) Flush(now time.Time) Output {
	if !s.Edit || !s.held {
		return Output{}
	}
	s.lastEdit = now
	return s.editable()
}

// End returns the rest at the turn's end.
func (s *Streamer) End() Output {
	if s.Edit {
		out := s.editable()
		s.buf.Reset()
		return out
	}
	b := s.buf.String()
	s.buf.Reset()
	if s.Whole {
		return Output{Send: Chunk(b, s.Limit)}
	}
	return Output{Send: Lines(b, s.Limit)}
}

// editable keeps the open message within the limit: whole pieces before the
// last are sent, the last is the open message's text.
func (s *Streamer) editable() Output {
	s.held = false
	pieces := Chunk(s.buf.String(), s.Limit)
	if len(pieces) == 0 {
		return Output{}
	}
	out := Output{Replace: pieces[len(pieces)-1]}
	if len(pieces) > 1 {
		out.Send = pieces[:len(pieces)-1]
		s.buf.Reset()
		s.buf.WriteString(out.Replace)
	}
	return out
}

// ToolLine is a tool call as one compact line: "⚙ Bash: ls -la (completed)".
func ToolLine(title, kind, status string, input json.RawMessage, max int) string {
	s := title
	if s == "" {
		s = kind
	}
	if arg := briefInput(input); arg != "" && !strings.Contains(s, arg) {
		s += ": " + arg
	}
	s = strings.Join(strings.Fields(s), " ")
	if status != "" {
		s += " (" + status + ")"
	}
	s = "⚙ " + s
	if max > 0 && len(s) > max {
		cut := max - len("…")
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// briefInput picks the one field of a tool's input a person recognises.
func briefInput(raw json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	for _, k := range []string{"command", "file_path", "path", "pattern", "url", "query"} {
		if v, ok := m[k].(string); ok && v != "" {
			return v
		}
	}
	return ""
}

// Card renders a card's prompt and its options numbered from 1.
func Card(prompt string, options []string) string {
	var b strings.Builder
	b.WriteString(prompt)
	for i, o := range options {
		fmt.Fprintf(&b, "\n  %d. %s", i+1, o)
	}
	b.WriteString("\nReply with the number.")
	return b.String()
}

// Choice reads a reply to a card of n options: "1" … "n" (ok false otherwise).
func Choice(reply string, n int) (int, bool) {
	k, err := strconv.Atoi(strings.TrimSpace(reply))
	if err != nil || k < 1 || k > n {
		return 0, false
	}
	return k - 1, true
}
