package tui

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	"github.com/charmbracelet/x/ansi"

	"github.com/parleyhq/parley/internal/chat"
)

// The changes a file tool proposes, shown as a unified diff (-/+ lines): in a
// permission card before it is answered, and in a tool's expanded view
// (Ctrl+O). The dashboard does the same (ui/src/chat/diff.ts).

// diffLine is one line of a line diff: ' ' kept, '-' removed, '+' added.
type diffLine struct {
	op   byte
	text string
}

// lineDiff is the longest-common-subsequence line diff of a and b. Inputs too
// large for the quadratic table are shown as old then new.
func lineDiff(a, b string) []diffLine {
	split := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	}
	x, y := split(a), split(b)
	n, m := len(x), len(y)
	var out []diffLine
	if n*m > 250_000 {
		for _, l := range x {
			out = append(out, diffLine{'-', l})
		}
		for _, l := range y {
			out = append(out, diffLine{'+', l})
		}
		return out
	}
	t := make([][]int32, n+1)
	for i := range t {
		t[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if x[i] == y[j] {
				t[i][j] = t[i+1][j+1] + 1
			} else {
				t[i][j] = max(t[i+1][j], t[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case x[i] == y[j]:
			out = append(out, diffLine{' ', x[i]})
			i, j = i+1, j+1
		case t[i+1][j] >= t[i][j+1]:
			out = append(out, diffLine{'-', x[i]})
			i++
		default:
			out = append(out, diffLine{'+', y[j]})
			j++
		}
	}
	for ; i < n; i++ {
		out = append(out, diffLine{'-', x[i]})
	}
	for ; j < m; j++ {
		out = append(out, diffLine{'+', y[j]})
	}
	return out
}

// proposedDiffs reads the change a Claude Code file tool (Edit, MultiEdit,
// Write) will make from its input; none for other tools.
func proposedDiffs(tool string, input json.RawMessage) []chat.Diff {
	type edit struct {
		Old *string `json:"old_string"`
		New *string `json:"new_string"`
	}
	var in struct {
		FilePath string  `json:"file_path"`
		Content  *string `json:"content"`
		edit
		Edits []edit `json:"edits"`
	}
	if json.Unmarshal(input, &in) != nil || in.FilePath == "" {
		return nil
	}
	var out []chat.Diff
	switch tool {
	case "Edit":
		in.Edits = []edit{in.edit}
		fallthrough
	case "MultiEdit":
		for _, e := range in.Edits {
			if e.Old != nil && e.New != nil {
				out = append(out, chat.Diff{Path: in.FilePath, OldText: *e.Old, NewText: *e.New})
			}
		}
	case "Write":
		if in.Content != nil {
			out = append(out, chat.Diff{Path: in.FilePath, NewText: *in.Content})
		}
	}
	return out
}

// diffLines lays diffs out as lines of at most w columns, limit lines in all
// (0: every line); the last line says how many more there are.
func (m *Model) diffLines(diffs []chat.Diff, w, limit int) []string {
	st := m.st
	var out []string
	for _, d := range diffs {
		old, head := d.OldText, "--- "+d.Path
		switch {
		case d.Unshown != "":
			head += " (replaces the file; its content is not shown: " + d.Unshown + ")"
		case old == "" && !d.Exists:
			head += " (new file)"
		}
		out = append(out, st.dim.Render(ansi.Truncate(printable(head), w, "…")))
		for _, l := range lineDiff(old, d.NewText) {
			line := ansi.Truncate(string(l.op)+" "+printable(l.text), w, "…")
			switch l.op {
			case '-':
				line = st.del.Render(line)
			case '+':
				line = st.add.Render(line)
			}
			out = append(out, line)
		}
	}
	if limit > 0 && len(out) > limit {
		more := len(out) - limit + 1
		out = append(out[:limit-1], st.dim.Render(fmt.Sprintf("… %d more lines (Ctrl+O shows all)", more)))
	}
	return out
}

// printable makes a line of a proposed file safe for the terminal: its escape
// sequences (cursor moves, erasing, colours) and other control characters are
// the agent's content, not the TUI's, and could hide or fake lines of the very
// change a person is asked to allow. Tabs become four spaces.
func printable(s string) string {
	s = ansi.Strip(strings.ReplaceAll(s, "\t", "    "))
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
}
