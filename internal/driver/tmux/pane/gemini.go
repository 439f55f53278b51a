// Gemini CLI's screen (0.61.0; testdata/gemini-0.61.0 holds the captures the
// tests read). Its input box is a dim rule, a hint line ("Shift+Tab to
// accept edits"), a padding line, then "> text" with the text's further
// lines indented three spaces, a padding line and the footer (workspace,
// sandbox, model). An empty box shows "> " and the placeholder "Type your
// message or @path/to/file" (grey, not dim). A submitted prompt shows above
// the box as " > text"; while a turn runs, a spinner line above the box says
// "(esc to cancel, Ns)". While a dialog holds the keyboard there is no box,
// and nothing is typed; a tool confirmation is read as a menu (geminimenu.go),
// other dialogs (/commands' menus) are not.

package pane

import (
	"strings"
)

// Dialect is the terminal agent whose screen is read.
type Dialect int

const (
	ClaudeCode Dialect = iota // Claude Code 2.1.197
	GeminiCLI                 // Gemini CLI 0.61.0
)

// geminiPlaceholder is what an empty Gemini box shows after its "> ".
const geminiPlaceholder = "Type your message or @path/to/file"

// geminiPrompt is how the box's first line, and a submitted prompt above
// it, begins.
const geminiPrompt = " > "

// geminiIndent is how the text's further lines begin, in the box and above.
const geminiIndent = "   "

// ReadAs parses a capture taken with -e of dialect d's screen.
func ReadAs(d Dialect, capture string) *Screen {
	if d != GeminiCLI {
		return Read(capture)
	}
	lines, full := stripDim(capture)
	s := &Screen{Lines: lines, Full: full, BoxTop: -1, BoxBottom: -1, dialect: GeminiCLI}
	s.findGeminiBox()
	return s
}

// findGeminiBox finds the lowest box: a dim rule (read from Full: Lines
// drop it), within three lines a line starting with "> ", and a line below
// the text that is not part of it (the footer).
func (s *Screen) findGeminiBox() {
	for t := len(s.Full) - 1; t >= 0; t-- {
		if !isRule(s.Full[t]) || strings.TrimSpace(s.Lines[t]) != "" {
			continue // Gemini's rule is dim: a rule the person can read is text
		}
		p := -1
		for i := t + 1; i < len(s.Lines) && i <= t+3; i++ {
			if strings.HasPrefix(s.Lines[i], geminiPrompt) || s.Lines[i] == strings.TrimRight(geminiPrompt, " ") {
				p = i
				break
			}
		}
		if p < 0 {
			return // the lowest rule opens no box: a dialog holds the keyboard
		}
		for j := p + 1; j < len(s.Lines); j++ {
			if l := s.Lines[j]; l != "" && !strings.HasPrefix(l, geminiIndent) {
				s.BoxTop, s.BoxBottom = t, j
				return
			}
		}
		return
	}
}

// geminiStaged is the text in Gemini's box, "" for the placeholder.
func (s *Screen) geminiStaged() string {
	var parts []string
	for i := s.BoxTop + 1; i < s.BoxBottom; i++ {
		l := s.Lines[i]
		if len(parts) == 0 {
			// The hint and padding lines come before the text's first line.
			if l == strings.TrimRight(geminiPrompt, " ") {
				l = geminiPrompt
			}
			first, ok := strings.CutPrefix(l, geminiPrompt)
			if !ok {
				continue
			}
			l = first
		}
		parts = append(parts, strings.TrimSpace(l))
	}
	staged := strings.TrimSpace(strings.Join(parts, "\n"))
	if staged == geminiPlaceholder {
		return ""
	}
	return staged
}

// geminiPrompts are the submitted prompts above the box, oldest first.
func (s *Screen) geminiPrompts() []string {
	above := s.Above()
	var out []string
	for i := 0; i < len(above); i++ {
		first, ok := strings.CutPrefix(above[i], geminiPrompt)
		if !ok || strings.TrimSpace(first) == "" {
			continue
		}
		parts := []string{first}
		j := i + 1
		for ; j < len(above) && strings.HasPrefix(above[j], geminiIndent) && strings.TrimSpace(above[j]) != ""; j++ {
			parts = append(parts, strings.TrimSpace(above[j]))
		}
		out = append(out, strings.Join(parts, "\n"))
		i = j - 1
	}
	return out
}

// geminiWorking reports Gemini's spinner line just above the box: a turn runs.
func (s *Screen) geminiWorking() bool {
	if s.BoxTop < 0 {
		return false
	}
	for i := s.BoxTop - 1; i >= 0 && i >= s.BoxTop-4; i-- {
		if strings.Contains(s.Lines[i], "(esc to cancel") {
			return true
		}
	}
	return false
}

// GeminiTurnDone reports that Gemini's turn is over: its box is up, no
// spinner runs, and a line of Gemini's own (its answer, a tool, "Request
// cancelled.") follows the last prompt on the screen. With no prompt on the
// screen (a long answer pushed it off the top) the box and the spinner tell.
func (s *Screen) GeminiTurnDone() bool {
	if s.dialect != GeminiCLI || !s.HasBox() || s.Working() {
		return false
	}
	above := s.Above()
	last := -1
	for i, l := range above {
		if strings.HasPrefix(l, geminiPrompt) && strings.TrimSpace(l[len(geminiPrompt):]) != "" {
			last = i
		}
	}
	if last < 0 {
		return true
	}
	for i := last + 1; i < len(above); i++ {
		t := strings.TrimSpace(above[i])
		if t == "" || t == "? for shortcuts" || strings.HasPrefix(above[i], geminiIndent) {
			continue // padding, the shortcuts hint, the prompt's further lines
		}
		return true
	}
	return false
}
