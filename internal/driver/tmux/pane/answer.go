package pane

import (
	"regexp"
	"strings"
	"unicode"
)

// toolLineRE: a tool call's line as Claude Code draws it ("Bash(echo hi)",
// "Read(file.go)", "Update(x)"): a name and its arguments in parentheses.
var toolLineRE = regexp.MustCompile(`^[A-Za-z][\w.:-]*(?: [\w.:-]+)*(?: \(MCP\))?\(`)

// Answer returns the text of the agent's answer to prompt as the pane draws
// it: each block of words below the newest submitted prompt that shows
// prompt (a "● " line and its indented lines), oldest first. Tool calls and
// their results (a line with "⎿" under it), thinking, spinners, tips and the
// status line are not words and are left out. finished says the answer has
// its closing status line ("✻ Churned for 6s"): a turn that is over, maybe
// an earlier one with the same prompt whose new copy is not drawn yet. ok is
// false when no such prompt is on the capture (the answer scrolled it off):
// then nothing drawn can be placed in the turn. An empty prompt takes the
// newest prompt of any text.
func (s *Screen) Answer(prompt string) (blocks []string, finished, ok bool) {
	above := s.Above()
	start := -1
	for i := len(above) - 1; i >= 0 && start < 0; i-- {
		l := above[i]
		if !strings.HasPrefix(l, "❯ ") {
			continue
		}
		parts := []string{strings.TrimPrefix(l, "❯ ")}
		j := i + 1
		for ; j < len(above) && above[j] != "" && continues(above[j], 2); j++ {
			parts = append(parts, above[j])
		}
		if block := strings.Join(parts, "\n"); strings.TrimSpace(block) != "" && (prompt == "" || Matches(block, prompt)) {
			start = j
		}
	}
	if start < 0 {
		return nil, false, false
	}
	// toolAt: a line with a tool's result ("  ⎿  …") right under it is a
	// tool's line, its bullet there or not (it blinks while the tool runs).
	toolAt := func(i int) bool {
		return i+1 < len(above) && strings.HasPrefix(strings.TrimLeft(above[i+1], " "), "⎿")
	}
	for i := start; i < len(above); i++ {
		l := above[i]
		if strings.HasPrefix(l, "✻ ") && !strings.Contains(l, "…") || strings.HasPrefix(strings.TrimLeft(l, " "), "⎿  Interrupted") {
			finished = true // the turn's closing line (a spinner's has "…"), or its stop
		}
		if !strings.HasPrefix(l, "● ") || toolAt(i) || toolLineRE.MatchString(strings.TrimPrefix(l, "● ")) {
			continue
		}
		lines := []string{strings.TrimPrefix(l, "● ")}
		j := i + 1
		for ; j < len(above); j++ {
			c := above[j]
			if c == "" {
				k := j
				for k < len(above) && above[k] == "" {
					k++
				}
				if k < len(above) && continues(above[k], 2) && !toolAt(k) {
					lines = append(lines, "")
					continue
				}
				break
			}
			if !continues(c, 2) || toolAt(j) {
				break
			}
			lines = append(lines, c[2:])
		}
		if text := strings.TrimSpace(strings.Join(lines, "\n")); text != "" {
			blocks = append(blocks, text)
		}
		i = j - 1
	}
	return blocks, finished, true
}

// Words reduces text to its letters and digits, lower-cased: what a pane's
// rendering of Markdown (bold, code, bullets, tables, wrapping) keeps of the
// words written, so a drawn answer can be recognised in the final text.
func Words(text string) string {
	var b strings.Builder
	b.Grow(len(text))
	for _, r := range text {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}
