package markdown

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
	east "github.com/yuin/goldmark/extension/ast"
)

// style is a set of text attributes; a bit set so pieces compare and merge.
type style uint16

const (
	styleBold style = 1 << iota
	styleItalic
	styleStrike
	styleCodeSpan
	styleLinkText
	styleURL
	styleHeading
	styleTitle // a level-1 heading
	styleRule
	styleQuote
	styleCode // a code block's lines
)

// piece is a run of text in one style.
type piece struct {
	text  string
	style style
}

func restyle(ps []piece, add style) []piece {
	out := make([]piece, len(ps))
	for i, p := range ps {
		out[i] = piece{p.text, p.style | add}
	}
	return out
}

// sgr builds the terminal style of s: attributes always, colors (those of
// glamour's dark style) only with color on. It is x/ansi's Style, not
// lipgloss's, which underlines and strikes rune by rune.
func (r *Renderer) sgr(s style) ansi.Style {
	if as, ok := r.styles[s]; ok {
		return as
	}
	var as ansi.Style
	color := func(fg, bg int) {
		if !r.color {
			return
		}
		if fg >= 0 {
			as = as.ForegroundColor(ansi.IndexedColor(fg))
		}
		if bg >= 0 {
			as = as.BackgroundColor(ansi.IndexedColor(bg))
		}
	}
	// Later lines win: a link inside a heading takes the link's color.
	if s&(styleHeading|styleTitle|styleBold|styleLinkText) != 0 {
		as = as.Bold()
	}
	if s&styleHeading != 0 {
		color(39, -1)
	}
	if s&styleTitle != 0 {
		color(228, 63)
	}
	if s&styleItalic != 0 {
		as = as.Italic(true)
	}
	if s&styleStrike != 0 {
		as = as.Strikethrough(true)
	}
	if s&styleCodeSpan != 0 {
		color(203, 236)
	}
	if s&styleLinkText != 0 {
		color(35, -1)
	}
	if s&styleURL != 0 {
		as = as.Underline(true)
		color(30, -1)
	}
	if s&styleRule != 0 {
		color(240, -1)
	}
	if s&styleQuote != 0 {
		color(8, -1)
	}
	if s&styleCode != 0 {
		color(251, -1)
	}
	r.styles[s] = as
	return as
}

func (r *Renderer) render(s style, text string) string {
	if text == "" {
		return text
	}
	as := r.sgr(s)
	if len(as) == 0 {
		return text
	}
	return as.Styled(text)
}

// wrap lays pieces out in lines of at most width cells, breaking at spaces
// (runs of which become one) and at hard breaks; a word wider than the line
// is cut.
func (w *walker) wrap(ps []piece, width int) []line {
	var (
		lines         []line
		cur, word     []piece
		curW, wordW   int
		spaced        bool // a space came before word
		space         piece
		emit          = func() { lines = append(lines, line{text: w.join(cur)}); cur, curW = nil, 0 }
		placeWord     func()
		appendToWords = func(p piece) {
			word = append(word, p)
			wordW += ansi.StringWidth(p.text)
		}
	)
	placeWord = func() {
		if len(word) == 0 {
			return
		}
		if len(cur) > 0 && spaced {
			if curW+1+wordW > width {
				emit()
			} else {
				cur = append(cur, space)
				curW++
			}
		}
		for wordW > width-curW {
			if curW > 0 {
				emit()
				continue
			}
			head, tail, headW := cut(word, width)
			cur = head
			emit()
			// Not measured again: a long word would cost its length per cut.
			word, wordW = tail, max(wordW-headW, 0)
		}
		cur = append(cur, word...)
		curW += wordW
		word, wordW, spaced = nil, 0, false
	}
	for _, p := range ps {
		start := 0
		for i, r := range p.text {
			if r != ' ' && r != '\n' {
				continue
			}
			if i > start {
				appendToWords(piece{p.text[start:i], p.style})
			}
			start = i + 1
			placeWord()
			if r == '\n' {
				emit()
				spaced = false
				continue
			}
			if len(cur) > 0 {
				spaced, space = true, piece{" ", p.style}
			}
		}
		if start < len(p.text) {
			appendToWords(piece{p.text[start:], p.style})
		}
	}
	placeWord()
	if len(cur) > 0 {
		emit()
	}
	// Trailing blank lines (a hard break at the end) carry nothing.
	for len(lines) > 0 && lines[len(lines)-1].text == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// cut splits a word's pieces after width cells (at least one rune, so a rune
// wider than the line still moves on), and says how wide the head is.
func cut(word []piece, width int) (head, tail []piece, headW int) {
	for i, p := range word {
		for j, r := range p.text {
			rw := ansi.StringWidth(string(r))
			if headW+rw > width && (headW > 0 || j > 0) {
				if j > 0 {
					head = append(head, piece{p.text[:j], p.style})
				}
				tail = append([]piece{{p.text[j:], p.style}}, word[i+1:]...)
				return head, tail, headW
			}
			headW += rw
		}
		head = append(head, p)
	}
	return head, nil, headW
}

// join renders a line's pieces, neighbours of one style in one sequence.
func (w *walker) join(ps []piece) string {
	var b strings.Builder
	for i := 0; i < len(ps); {
		j := i + 1
		var t strings.Builder
		t.WriteString(ps[i].text)
		for j < len(ps) && ps[j].style == ps[i].style {
			t.WriteString(ps[j].text)
			j++
		}
		b.WriteString(w.r.render(ps[i].style, t.String()))
		i = j
	}
	return b.String()
}

// table lays a GFM table out in aligned columns, header in bold, shrinking
// the widest columns (their cells wrap) until the table fits the width.
func (w *walker) table(t *east.Table, width int) []line {
	var rows [][][]piece
	cols := len(t.Alignments)
	for r := t.FirstChild(); r != nil; r = r.NextSibling() {
		var st style
		if _, ok := r.(*east.TableHeader); ok {
			st = styleBold
		}
		var cells [][]piece
		for c := r.FirstChild(); c != nil; c = c.NextSibling() {
			cells = append(cells, w.inline(c, st))
		}
		cols = max(cols, len(cells))
		rows = append(rows, cells)
	}
	if cols == 0 {
		return nil
	}
	widths := make([]int, cols)
	for _, cells := range rows {
		for i, c := range cells {
			widths[i] = max(widths[i], ansi.StringWidth(plain(c)))
		}
	}
	const sep = 3 // " │ "
	total := sep * (cols - 1)
	for _, cw := range widths {
		total += cw
	}
	for total > width {
		widest := 0
		for i, cw := range widths {
			if cw > widths[widest] {
				widest = i
			}
		}
		if widths[widest] <= 3 {
			break // too many columns: the caller's last resort breaks the lines
		}
		widths[widest]--
		total--
	}
	bar := w.r.render(styleRule, " │ ")
	var out []line
	for ri, cells := range rows {
		wrapped := make([][]line, cols)
		height := 1
		for i := range cols {
			if i < len(cells) {
				wrapped[i] = w.wrap(cells[i], max(widths[i], 1))
			}
			height = max(height, len(wrapped[i]))
		}
		for k := range height {
			parts := make([]string, cols)
			for i := range cols {
				var s string
				if k < len(wrapped[i]) {
					s = wrapped[i][k].text
				}
				parts[i] = align(s, widths[i], alignment(t, i))
			}
			out = append(out, line{text: strings.TrimRight(strings.Join(parts, bar), " ")})
		}
		if ri == 0 {
			rule := make([]string, cols)
			for i, cw := range widths {
				rule[i] = strings.Repeat("─", cw)
			}
			out = append(out, line{text: w.r.render(styleRule, strings.Join(rule, "─┼─"))})
		}
	}
	return out
}

func alignment(t *east.Table, i int) east.Alignment {
	if i < len(t.Alignments) {
		return t.Alignments[i]
	}
	return east.AlignNone
}

func align(s string, width int, a east.Alignment) string {
	pad := max(width-ansi.StringWidth(s), 0)
	switch a {
	case east.AlignRight:
		return strings.Repeat(" ", pad) + s
	case east.AlignCenter:
		return strings.Repeat(" ", pad/2) + s + strings.Repeat(" ", pad-pad/2)
	}
	return s + strings.Repeat(" ", pad)
}
