// Package pane reads a terminal agent's screen: a `tmux capture-pane -e` capture
// becomes lines with the dim (SGR 2) runs dropped, split at the input box, with
// the submitted prompts above it, the staged text inside it, and the live menu
// if one is the last thing on the pane. It is the one reader the tmux driver's
// send, its cards and `parley debug pane` all use, so they can never disagree.
//
// The shapes are those of Claude Code 2.1.197 (testdata/claude-2.1.197 holds
// the captures the tests read); a new version is a deliberate step with new
// captures.
package pane

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Screen is one capture, read.
type Screen struct {
	// Lines are the visible text of each line: escapes removed, dim runs
	// dropped, no-break spaces made spaces, trailing blanks trimmed.
	Lines []string
	// Full are the same lines with the dim runs kept: menus are read from
	// these (a picker's "Type something." goes dim under the cursor).
	Full []string
	// BoxTop and BoxBottom are the rule lines around the input box, or -1
	// (Gemini's: the rule above it and its footer line).
	BoxTop, BoxBottom int
	dialect           Dialect
}

// Read parses a capture taken with -e.
func Read(capture string) *Screen {
	lines, full := stripDim(capture)
	s := &Screen{Lines: lines, Full: full, BoxTop: -1, BoxBottom: -1}
	s.findBox()
	return s
}

// stripDim removes escape sequences, keeping the text of every run that is not
// dim. tmux -e carries attributes across line ends, so the state is kept
// across lines too.
func stripDim(capture string) (lines, full []string) {
	var b, fb strings.Builder
	var st sgr
	// pending holds reverse-video text (the cursor cell): kept unless dim text
	// follows it at once, as in Claude Code's placeholder, whose first letter
	// sits under the cursor ("P" + dim "ress up to edit queued messages").
	var pending []rune
	flush := func() {
		for _, r := range pending {
			b.WriteRune(r)
		}
		pending = pending[:0]
	}
	i := 0
	for i < len(capture) {
		c := capture[i]
		switch {
		case c == 0x1b && i+1 < len(capture) && capture[i+1] == '[':
			j := i + 2
			for j < len(capture) && (capture[j] < 0x40 || capture[j] > 0x7e) {
				j++
			}
			if j < len(capture) && capture[j] == 'm' {
				st = st.apply(capture[i+2 : j])
			}
			i = j + 1
		case c == 0x1b && i+1 < len(capture) && capture[i+1] == ']':
			// OSC (e.g. a hyperlink): up to BEL or ESC \.
			j := i + 2
			for j < len(capture) && capture[j] != 0x07 && !(capture[j] == 0x1b && j+1 < len(capture) && capture[j+1] == '\\') {
				j++
			}
			if j < len(capture) && capture[j] == 0x1b {
				j++
			}
			i = j + 1
		case c == 0x1b:
			i += 2
		case c == '\n':
			flush()
			lines = append(lines, trimRight(b.String()))
			full = append(full, trimRight(fb.String()))
			b.Reset()
			fb.Reset()
			i++
		case c < 0x20 || c == 0x7f:
			i++
		default:
			r, n := utf8.DecodeRuneInString(capture[i:])
			i += n
			if r == '\u00a0' {
				r = ' '
			}
			fb.WriteRune(r)
			switch {
			case st.dim:
				if r != ' ' {
					pending = pending[:0]
				}
			case st.reverse:
				pending = append(pending, r)
			default:
				flush()
				b.WriteRune(r)
			}
		}
	}
	flush()
	if b.Len() > 0 || fb.Len() > 0 {
		lines = append(lines, trimRight(b.String()))
		full = append(full, trimRight(fb.String()))
	}
	// Trailing empty lines are the unused bottom of the screen.
	for len(full) > 0 && full[len(full)-1] == "" {
		lines, full = lines[:len(lines)-1], full[:len(full)-1]
	}
	return lines, full
}

func trimRight(s string) string { return strings.TrimRightFunc(s, unicode.IsSpace) }

// sgr is the part of the graphic state the reader cares about.
type sgr struct{ dim, reverse bool }

// apply returns the state after one SGR parameter list.
func (st sgr) apply(params string) sgr {
	if params == "" {
		return sgr{}
	}
	ps := strings.FieldsFunc(params, func(r rune) bool { return r == ';' })
	for k := 0; k < len(ps); k++ {
		p := ps[k]
		if i := strings.IndexByte(p, ':'); i >= 0 { // colon sub-parameters: only the first counts
			p = p[:i]
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			continue
		}
		switch n {
		case 0:
			st = sgr{}
		case 2:
			st.dim = true
		case 22:
			st.dim = false
		case 7:
			st.reverse = true
		case 27:
			st.reverse = false
		case 38, 48, 58:
			if k+1 < len(ps) && ps[k+1] == "5" {
				k += 2
			} else if k+1 < len(ps) && ps[k+1] == "2" {
				k += 4
			}
		}
	}
	return st
}

// isRule reports a horizontal rule of the box (and of menus).
func isRule(line string) bool {
	t := strings.TrimSpace(line)
	if utf8.RuneCountInString(t) < 10 {
		return false
	}
	for _, r := range t {
		if r != '─' {
			return false
		}
	}
	return true
}

// findBox finds the lowest input box: a rule, a line starting with ❯, and a
// rule below it.
func (s *Screen) findBox() {
	for b := len(s.Lines) - 1; b > 0; b-- {
		if !isRule(s.Lines[b]) {
			continue
		}
		for t := b - 1; t >= 0 && b-t <= 60; t-- {
			if !isRule(s.Lines[t]) {
				continue
			}
			if t+1 < b && strings.HasPrefix(s.Lines[t+1], "❯") {
				s.BoxTop, s.BoxBottom = t, b
				return
			}
			break
		}
	}
}

// HasBox reports whether the input box is on the screen (it is not while a
// permission menu or a question picker holds the keyboard).
func (s *Screen) HasBox() bool { return s.BoxTop >= 0 }

// Above returns the lines above the input box (all lines when there is none).
func (s *Screen) Above() []string {
	if s.BoxTop < 0 {
		return s.Lines
	}
	return s.Lines[:s.BoxTop]
}

// Staged returns the text in the input box, "" when it is empty (the dim
// placeholder is not text).
func (s *Screen) Staged() string {
	if s.BoxTop < 0 {
		return ""
	}
	if s.dialect == GeminiCLI {
		return s.geminiStaged()
	}
	var parts []string
	for i := s.BoxTop + 1; i < s.BoxBottom; i++ {
		l := s.Lines[i]
		if i == s.BoxTop+1 {
			l = strings.TrimPrefix(l, "❯")
		}
		parts = append(parts, strings.TrimSpace(l))
	}
	return strings.TrimSpace(strings.Join(parts, "\n"))
}

// PastedPlaceholder reports whether the box shows a collapsed paste
// ("[Pasted text #1 +94 lines]"), which Claude Code shows for long pastes.
func (s *Screen) PastedPlaceholder() bool {
	return strings.Contains(s.Staged(), "[Pasted text #")
}

// Normalize drops every blank: the TUI wraps and indents long text anywhere.
func Normalize(text string) string {
	var b strings.Builder
	b.Grow(len(text))
	for _, r := range text {
		if unicode.IsSpace(r) || r == '\u00a0' {
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// TailRunes is how much of a long text's end is compared.
const TailRunes = 200

func tail(norm string) (string, bool) {
	n := utf8.RuneCountInString(norm)
	if n <= TailRunes {
		return norm, false
	}
	r := []rune(norm)
	return string(r[n-TailRunes:]), true
}

// Prompts returns the submitted prompts above the box, oldest first: a line
// starting with "❯ " (or "  ❯ " for a prompt Claude Code queued while busy)
// and its indented continuation lines.
func (s *Screen) Prompts() []string {
	if s.dialect == GeminiCLI {
		return s.geminiPrompts()
	}
	above := s.Above()
	// A person may well send "1. do this": only the live menu's own lines are
	// options, not every numbered line.
	m, live, _ := s.Menu()
	var out []string
	for i := 0; i < len(above); i++ {
		if live && i >= m.First && i <= m.Last {
			continue
		}
		l := above[i]
		var first string
		var indent int
		switch {
		case strings.HasPrefix(l, "❯ "):
			first, indent = strings.TrimPrefix(l, "❯ "), 2
		case strings.HasPrefix(l, "  ❯ "):
			first, indent = strings.TrimPrefix(l, "  ❯ "), 4
		default:
			continue
		}
		if strings.TrimSpace(first) == "" {
			continue
		}
		parts := []string{first}
		j := i + 1
		for ; j < len(above); j++ {
			c := above[j]
			if c == "" {
				// A blank line inside a prompt is kept only if the prompt goes on.
				k := j
				for k < len(above) && above[k] == "" {
					k++
				}
				if k < len(above) && continues(above[k], indent) {
					parts = append(parts, "")
					continue
				}
				break
			}
			if !continues(c, indent) {
				break
			}
			parts = append(parts, c)
		}
		out = append(out, strings.Join(parts, "\n"))
		i = j - 1
	}
	return out
}

func continues(line string, indent int) bool {
	if len(line) < indent || strings.TrimSpace(line[:indent]) != "" {
		return false
	}
	t := strings.TrimSpace(line)
	r, _ := utf8.DecodeRuneInString(t)
	return !isMarker(r)
}

// isMarker: runes that open an agent, tool, status or prompt line.
func isMarker(r rune) bool {
	switch r {
	case '●', '⎿', '✻', '❯', '✽', '✶', '✳', '✢', '·', '*', '─', '╭', '╰', '│':
		return true
	}
	return false
}

// Matches reports whether a prompt block shows text (whitespace-insensitive; a
// long text by its tail).
func Matches(block, text string) bool {
	want, long := tail(Normalize(text))
	got := Normalize(block)
	if want == "" {
		return false
	}
	if long {
		return strings.HasSuffix(got, want)
	}
	return got == want
}

// CountSubmitted counts the prompts above the box that show text.
func (s *Screen) CountSubmitted(text string) int {
	n := 0
	for _, p := range s.Prompts() {
		if Matches(p, text) {
			n++
		}
	}
	return n
}

// ShowsAbove reports whether text (by its tail) shows anywhere above the box:
// a cheap sign that a submitted prompt may have appeared, never proof of one.
func (s *Screen) ShowsAbove(text string) bool {
	want, _ := tail(Normalize(text))
	return want != "" && strings.Contains(Normalize(strings.Join(s.Above(), "")), want)
}

// InBox reports whether the box holds text (by its tail), or a collapsed paste.
func (s *Screen) InBox(text string) bool {
	staged := s.Staged()
	if staged == "" {
		return false
	}
	if strings.Contains(staged, "[Pasted text #") {
		return true
	}
	want, _ := tail(Normalize(text))
	got := Normalize(staged)
	if len(want) > len(got) {
		// The box may show only the end of a long text.
		return strings.HasSuffix(want, got) && utf8.RuneCountInString(got) >= 20
	}
	return strings.HasSuffix(got, want)
}

// spinnerRE: the working status line ("* Frosting… (running stop hook · 0s)").
var spinnerRE = regexp.MustCompile(`^[*✢✳✶✻✽·] \S.*…`)

var placeholderRE = regexp.MustCompile(`^\[Pasted text #\d+(?: \+\d+ lines)?\]$`)

// BoxHolds reports whether the box holds text and nothing else: no leftover
// typing before it (a paste glued onto stale input must not be submitted).
// A collapsed paste counts when it is the box's only content.
func (s *Screen) BoxHolds(text string) bool {
	staged := s.Staged()
	if staged == "" {
		return false
	}
	if placeholderRE.MatchString(staged) {
		return true
	}
	got, want := Normalize(staged), Normalize(text)
	if got == want {
		return true
	}
	// The box may show only the end of a long text.
	return utf8.RuneCountInString(want) > TailRunes && strings.HasSuffix(want, got) && utf8.RuneCountInString(got) >= TailRunes/2
}

// Working reports whether Claude Code says it is working on a turn: its
// status line under the input box offers "esc to interrupt". Text typed now
// would go into its own queue of messages, not to the model as a prompt.
func (s *Screen) Working() bool {
	if s.dialect == GeminiCLI {
		return s.geminiWorking()
	}
	if s.BoxBottom < 0 {
		return false
	}
	for _, l := range s.Lines[s.BoxBottom+1:] {
		if strings.Contains(l, "esc to interrupt") {
			return true
		}
	}
	return false
}

// Speaker kinds of LastSpeaker.
const (
	SpeakerAgent  = "agent"  // ● text or a tool line
	SpeakerTool   = "tool"   // ⎿ result
	SpeakerStatus = "status" // ✻ … for 3s
	SpeakerPerson = "person" // ❯ submitted prompt
	SpeakerNone   = ""
)

// LastSpeaker says who spoke last above the box.
func (s *Screen) LastSpeaker() string {
	above := s.Above()
	for i := len(above) - 1; i >= 0; i-- {
		if k := ender(above[i]); k != "" {
			return k
		}
	}
	return SpeakerNone
}

// ender classifies a line that ends any menu above it, or returns "".
func ender(line string) string {
	switch {
	case strings.HasPrefix(line, "● "):
		return SpeakerAgent
	case strings.HasPrefix(line, "✻ ") || spinnerRE.MatchString(line):
		return SpeakerStatus
	case strings.HasPrefix(strings.TrimLeft(line, " "), "⎿") && strings.HasPrefix(line, "  "):
		return SpeakerTool
	case (strings.HasPrefix(line, "❯ ") || strings.HasPrefix(line, "  ❯ ")) && !isOption(line) &&
		strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "❯")) != "":
		return SpeakerPerson
	}
	return ""
}
