// Gemini CLI's tool confirmations (0.61.0), read as menus. While one is up
// it is the last thing on the screen and there is no input box:
//
//	╭──────────────────────────────────────────╮
//	│ ? Shell  touch zz                        │  "? " the tool waits; its name, what it does
//	│ ╭──────────────────────────────────────╮ │
//	│ │ touch zz                             │ │  the command, or the file's new lines
//	│ ╰──────────────────────────────────────╯ │
//	│ Allow execution of [Shell]?              │  the question
//	│                                          │
//	│ ● 1. Allow once                          │  ● marks the selected option
//	│   2. Allow for this session              │
//	│   3. No, suggest changes (esc)           │
//	╰──────────────────────────────────────────╯
//
// A digit answers at once (as on Claude Code's menus).

package pane

import (
	"regexp"
	"strconv"
	"strings"
)

// geminiOptionRE: an option line inside the frame, "● 1. Allow once" or "2. …".
var geminiOptionRE = regexp.MustCompile(`^(●\s+)?(\d{1,2})\.\s+(.*)$`)

// geminiEditor is the option that opens an external editor on the change:
// usable only at the terminal.
const geminiEditor = "Modify with external editor"

// geminiMenu reads the tool confirmation that holds Gemini's keyboard.
func (s *Screen) geminiMenu() (Menu, bool, string) {
	if s.HasBox() {
		return Menu{}, false, "Gemini's input box is up: no dialog holds the keyboard"
	}
	lines := s.Lines
	bottom := len(lines) - 1
	for bottom >= 0 && strings.TrimSpace(lines[bottom]) == "" {
		bottom--
	}
	if bottom < 0 {
		return Menu{}, false, "the pane is empty"
	}
	b := strings.TrimSpace(lines[bottom])
	if !strings.HasPrefix(b, "╰") || !strings.HasSuffix(b, "╯") {
		return Menu{}, false, "the pane does not end in a dialog's frame"
	}
	// The frame's top is the nearest line above that opens a frame at the
	// same column; every line in between is walled by "│".
	indent := len(lines[bottom]) - len(strings.TrimLeft(lines[bottom], " "))
	top := -1
	for i := bottom - 1; i >= 0; i-- {
		l := lines[i]
		rest, ok := strings.CutPrefix(l, strings.Repeat(" ", indent))
		if !ok {
			return Menu{}, false, "the dialog's frame is broken (line " + strconv.Itoa(i+1) + ")"
		}
		if strings.HasPrefix(rest, "╭") {
			top = i
			break
		}
		if !strings.HasPrefix(rest, "│") {
			return Menu{}, false, "the dialog's frame is broken (line " + strconv.Itoa(i+1) + ")"
		}
	}
	if top < 0 {
		return Menu{}, false, "the dialog's frame has no top on the pane"
	}
	inner := make([]string, 0, bottom-top-1)
	for i := top + 1; i < bottom; i++ {
		inner = append(inner, unwall(lines[i][indent:]))
	}

	// The header: "? Tool  what it does".
	h := 0
	for h < len(inner) && inner[h] == "" {
		h++
	}
	if h == len(inner) || !strings.HasPrefix(inner[h], "? ") {
		return Menu{}, false, "the dialog is not a tool confirmation (no \"? Tool\" header)"
	}
	m := Menu{Kind: MenuPermission}
	head := strings.TrimSpace(strings.TrimPrefix(inner[h], "? "))
	m.Title, _, _ = strings.Cut(head, " ")
	if sub := strings.TrimSpace(strings.TrimPrefix(head, m.Title)); sub != "" {
		m.Detail = append(m.Detail, sub)
	}

	// The options: numbered 1…n at the end of the frame, a long label's
	// further lines under it.
	first := -1
	for i := len(inner) - 1; i > h; i-- {
		if n, _, _, ok := geminiOption(inner[i]); ok && n == 1 {
			first = i
			break
		}
	}
	if first < 0 {
		return Menu{}, false, "the dialog has no option 1"
	}
	for i := first; i < len(inner); i++ {
		n, label, cur, ok := geminiOption(inner[i])
		switch {
		case ok && n == len(m.Options)+1:
			label = strings.TrimSuffix(label, " (esc)") // the key for it, not its words
			m.Options = append(m.Options, Option{Number: n, Label: label, Terminal: label == geminiEditor})
			if cur {
				m.Cursor = n
			}
			m.Last = top + 1 + i
		case inner[i] == "":
		case len(m.Options) > 0 && !ok:
			o := &m.Options[len(m.Options)-1]
			o.Label += " " + inner[i]
			m.Last = top + 1 + i
		default:
			return Menu{}, false, "the dialog's options are not numbered 1, 2, 3…"
		}
	}
	m.First = top + 1 + first

	// Between the header and the options: a framed body (the command, the
	// file's lines) and the question.
	var body, question []string
	for i := h + 1; i < first; i++ {
		l := inner[i]
		switch {
		case strings.HasPrefix(l, "╭"):
			for i++; i < first && !strings.HasPrefix(inner[i], "╰"); i++ {
				if t := unwall(inner[i]); t != "" {
					body = append(body, t)
				}
			}
		case l != "":
			question = append(question, l)
		}
	}
	if len(question) == 0 {
		return Menu{}, false, "the dialog asks no question"
	}
	m.Question = strings.Join(question, " ")
	if len(m.Detail) == 0 || strings.Join(body, "\n") != m.Detail[0] {
		m.Detail = append(m.Detail, body...)
	}
	return m, true, ""
}

// unwall is a framed line's text: its walls ("│ … │") and padding gone.
func unwall(l string) string {
	l = strings.TrimSpace(l)
	if strings.HasPrefix(l, "│") && strings.HasSuffix(l, "│") && len(l) >= 2*len("│") {
		l = l[len("│") : len(l)-len("│")]
	}
	return strings.TrimSpace(l)
}

func geminiOption(line string) (n int, label string, cursor, ok bool) {
	m := geminiOptionRE.FindStringSubmatch(line)
	if m == nil {
		return 0, "", false, false
	}
	n, _ = strconv.Atoi(m[2])
	return n, strings.TrimSpace(m[3]), m[1] != "", true
}
