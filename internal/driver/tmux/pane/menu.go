package pane

import (
	"regexp"
	"strconv"
	"strings"
)

// Menu kinds.
const (
	MenuPermission = "permission" // "Do you want to proceed?" with Yes / Yes, and … / No; Gemini's tool confirmations
	MenuQuestion   = "question"   // an AskUserQuestion picker
	MenuReview     = "review"     // the picker's "Review your answers" page
)

// Menu is a numbered menu that is the last thing on the pane.
type Menu struct {
	Kind string
	// Title: the tool line of a permission menu ("Bash command"), the header of a question.
	Title string
	// Detail: the lines between the title and the question (the command, its description).
	Detail []string
	// Question: "Do you want to proceed?" or the picker's question.
	Question    string
	Options     []Option
	MultiSelect bool
	// Cursor is the number of the option the ❯ points at (0: none seen).
	Cursor int
	// First and Last are the line indices of the menu's first and last option.
	First, Last int
}

// Option is one numbered entry.
type Option struct {
	Number      int
	Label       string
	Description string
	Checked     bool // multi-select: [✔]
	// Free: "Type something." (the person's own words); Chat: "Chat about this".
	Free, Chat bool
	// Terminal: usable only at the terminal (Gemini's "Modify with external
	// editor" opens an editor there).
	Terminal bool
}

// Choices are the options a person answers with (no "Type something" or "Chat about this").
func (m Menu) Choices() []Option {
	var out []Option
	for _, o := range m.Options {
		if !o.Free && !o.Chat {
			out = append(out, o)
		}
	}
	return out
}

// Option returns the option with a label (case- and blank-insensitive).
func (m Menu) Option(label string) (Option, bool) {
	want := strings.ToLower(Normalize(label))
	for _, o := range m.Options {
		if strings.ToLower(Normalize(o.Label)) == want {
			return o, true
		}
	}
	return Option{}, false
}

// FreeOption returns the "Type something" option.
func (m Menu) FreeOption() (Option, bool) {
	for _, o := range m.Options {
		if o.Free {
			return o, true
		}
	}
	return Option{}, false
}

var optionRE = regexp.MustCompile(`^(\s*)(❯\s*)?(\d{1,2})\.(?:\s+(.*))?$`)

func isOption(line string) bool { return optionRE.MatchString(line) }

func parseOption(line string) (n int, label string, cursor, ok bool) {
	m := optionRE.FindStringSubmatch(line)
	if m == nil {
		return 0, "", false, false
	}
	n, _ = strconv.Atoi(m[3])
	return n, strings.TrimSpace(m[4]), m[2] != "", true
}

// Menu returns the live menu, or false and why there is none: a menu is live
// only when it is the last thing on the pane (no assistant line, tool result,
// status line or submitted prompt after it; an empty input box does not count).
func (s *Screen) Menu() (Menu, bool, string) {
	if s.dialect == GeminiCLI {
		return s.geminiMenu()
	}
	lines := s.Full
	last := -1
	for i := len(lines) - 1; i >= 0; i-- {
		if s.inBox(i) {
			continue
		}
		if isOption(lines[i]) {
			last = i
			break
		}
	}
	if last < 0 {
		return Menu{}, false, "no numbered menu on the pane"
	}
	for i := last + 1; i < len(lines); i++ {
		if s.inBox(i) {
			continue
		}
		if k := ender(lines[i]); k != "" {
			return Menu{}, false, "the last menu on the pane is over: " + k + " output follows it (line " + strconv.Itoa(i+1) + ")"
		}
	}
	// Walk up to option 1, through descriptions, blank lines and rules.
	first := -1
	want, _, _, _ := parseOption(lines[last])
	for i := last; i >= 0 && last-i < 80; i-- {
		if s.inBox(i) {
			break
		}
		n, _, _, ok := parseOption(lines[i])
		if !ok {
			if ender(lines[i]) != "" {
				break
			}
			continue
		}
		if n != want {
			break
		}
		if n == 1 {
			first = i
			break
		}
		want--
	}
	if first < 0 {
		return Menu{}, false, "a numbered list without an option 1 is not a menu"
	}
	m := Menu{First: first, Last: last}
	for i := first; i <= last; i++ {
		n, label, cur, ok := parseOption(lines[i])
		if !ok {
			t := strings.TrimSpace(lines[i])
			if t == "" || isRule(lines[i]) || len(m.Options) == 0 {
				continue
			}
			o := &m.Options[len(m.Options)-1]
			if o.Description != "" {
				o.Description += " "
			}
			o.Description += t
			continue
		}
		o := Option{Number: n, Label: label}
		if strings.HasPrefix(label, "[ ] ") || strings.HasPrefix(label, "[✔] ") || strings.HasPrefix(label, "[✓] ") || strings.HasPrefix(label, "[x] ") {
			m.MultiSelect = true
			o.Checked = !strings.HasPrefix(label, "[ ]")
			o.Label = strings.TrimSpace(label[strings.Index(label, "]")+1:])
		}
		switch strings.TrimSuffix(o.Label, ".") {
		case "Type something":
			o.Free = true
		case "Chat about this":
			o.Chat = true
		}
		if cur {
			m.Cursor = n
		}
		m.Options = append(m.Options, o)
	}
	// The lines above option 1, up to the rule that opens the menu. Output
	// of the agent in between means the list is part of what it said.
	top := first - 1
	for top >= 0 && !isRule(lines[top]) {
		if ender(lines[top]) != "" || first-top > 30 {
			return Menu{}, false, "the numbered list is part of the agent's output, not a menu"
		}
		top--
	}
	if top < 0 {
		return Menu{}, false, "the numbered list has no menu frame above it"
	}
	var head []string
	for i := top + 1; i < first; i++ {
		if t := strings.TrimSpace(lines[i]); t != "" {
			head = append(head, t)
		}
	}
	footer := strings.Join(lines[last+1:], "\n")
	switch {
	case len(head) > 0 && strings.HasPrefix(head[len(head)-1], "Do you want to"):
		m.Kind = MenuPermission
		m.Question = head[len(head)-1]
		if len(head) > 1 {
			m.Title = head[0]
			m.Detail = head[1 : len(head)-1]
		}
	case containsAny(head, "Review your answers"):
		m.Kind = MenuReview
		m.MultiSelect = false
		if len(head) > 0 {
			m.Question = head[len(head)-1]
		}
	case containsAny(head, "☐", "☒", "✔ Submit") || strings.Contains(footer, "Enter to select"):
		m.Kind = MenuQuestion
		for _, h := range head {
			if strings.ContainsAny(h, "☐☒") {
				m.Title = header(h)
			}
		}
		if len(head) > 0 {
			m.Question = head[len(head)-1]
		}
	default:
		return Menu{}, false, "the numbered list at the end of the pane is neither a permission menu nor a question picker"
	}
	return m, true, ""
}

// header takes the current tab's header from "☐ Color" or "←  ☒ Fruit  ✔ Submit  →".
func header(line string) string {
	for _, f := range strings.Split(line, "  ") {
		f = strings.TrimSpace(f)
		if strings.HasPrefix(f, "☐") || strings.HasPrefix(f, "☒") {
			return strings.TrimSpace(strings.TrimLeft(f, "☐☒"))
		}
	}
	return strings.TrimSpace(line)
}

func containsAny(lines []string, subs ...string) bool {
	for _, l := range lines {
		for _, s := range subs {
			if strings.Contains(l, s) {
				return true
			}
		}
	}
	return false
}

func (s *Screen) inBox(i int) bool { return s.BoxTop >= 0 && i >= s.BoxTop && i <= s.BoxBottom }
