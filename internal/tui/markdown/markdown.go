// Package markdown renders agent Markdown for the terminal: goldmark parses
// (CommonMark with GFM tables and strikethrough), lipgloss styles, and the
// layout (wrapping, lists, quotes, tables) is written here. It replaces
// glamour, whose syntax highlighter (chroma) parsed ~250 lexers and ~70 styles
// at init in every parley process, the daemon's included.
package markdown

import (
	"strconv"
	"strings"

	"github.com/charmbracelet/x/ansi"
	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// TabWidth is where tab stops fall: tabs are expanded before parsing, since a
// terminal does not show them and code lost its indentation.
const TabWidth = 4

// minWidth is the narrowest a nested block is laid out in; deeper nesting
// stops indenting rather than squeezing text to a column per line.
const minWidth = 8

// Renderer renders Markdown with one set of styles. It holds no per-call
// state, so one Renderer serves every width.
type Renderer struct {
	parser parser.Parser
	color  bool
	styles map[style]ansi.Style
}

// New returns a renderer; color false keeps bold, italics, underline and the
// layout but writes no color, as NO_COLOR asks (no-color.org). A Renderer is
// not safe for concurrent use (it caches styles).
func New(color bool) *Renderer {
	return &Renderer{parser: newParser(), color: color, styles: map[style]ansi.Style{}}
}

// Render lays src out in lines no wider than width cells, but for code block
// lines, which are kept whole (the caller truncates them to its screen).
func (r *Renderer) Render(src string, width int) string {
	lines := r.lines(src, width)
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.text
	}
	return strings.Join(out, "\n")
}

func (r *Renderer) lines(src string, width int) []line {
	width = max(width, 1)
	source := []byte(ExpandTabs(src))
	doc := r.parser.Parse(text.NewReader(source))
	w := &walker{r: r, src: source}
	var out []line
	for _, l := range w.blocks(doc, width) {
		if !l.code && ansi.StringWidth(l.text) > width {
			// Only nesting deeper than the width allows gets here: break
			// rather than overflow.
			for _, t := range strings.Split(ansi.Hardwrap(l.text, width, true), "\n") {
				out = append(out, line{text: t})
			}
			continue
		}
		out = append(out, l)
	}
	return out
}

// line is one rendered line; code lines are verbatim and may be wider.
type line struct {
	text string
	code bool
}

type walker struct {
	r   *Renderer
	src []byte
}

// blocks renders parent's block children, a blank line between them but in
// tight lists.
func (w *walker) blocks(parent ast.Node, width int) []line {
	tight := false
	if parent.Kind() == ast.KindListItem {
		if l, ok := parent.Parent().(*ast.List); ok {
			tight = l.IsTight
		}
	}
	var out []line
	for n := parent.FirstChild(); n != nil; n = n.NextSibling() {
		lines := w.block(n, width)
		if len(lines) == 0 {
			continue
		}
		if len(out) > 0 && !tight {
			out = append(out, line{})
		}
		out = append(out, lines...)
	}
	return out
}

func (w *walker) block(n ast.Node, width int) []line {
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		return w.wrap(w.inline(n, 0), width)
	case *ast.Heading:
		return w.heading(n, width)
	case *ast.ThematicBreak:
		return []line{{text: w.r.render(styleRule, strings.Repeat("─", min(width, 40)))}}
	case *ast.FencedCodeBlock, *ast.CodeBlock, *ast.HTMLBlock:
		return w.code(n)
	case *ast.Blockquote:
		return w.quote(n, width)
	case *ast.List:
		return w.list(n, width)
	case *east.Table:
		return w.table(n, width)
	}
	if n.Type() == ast.TypeBlock && n.HasChildren() {
		return w.blocks(n, width)
	}
	return nil
}

func (w *walker) heading(n *ast.Heading, width int) []line {
	ps := w.inline(n, styleHeading)
	switch {
	case n.Level == 1 && w.r.color && width > 2:
		// A bar of background color, as glamour drew it.
		lines := w.wrap(restyle(ps, styleTitle), width-2)
		pad := w.r.render(styleTitle, " ")
		for i := range lines {
			lines[i].text = pad + lines[i].text + pad
		}
		return lines
	default:
		ps = append([]piece{{strings.Repeat("#", n.Level) + " ", styleHeading}}, ps...)
	}
	return w.wrap(ps, width)
}

// code keeps a code block's lines verbatim: no highlighting, no wrapping,
// indented two cells so it stands apart from the prose.
func (w *walker) code(n ast.Node) []line {
	segs := n.Lines()
	out := make([]line, 0, segs.Len())
	for i := range segs.Len() {
		s := segs.At(i)
		t := strings.TrimRight(string(s.Value(w.src)), "\r\n")
		// An indented block's segment may start inside the expanded tab's spaces.
		t = strings.Repeat(" ", s.Padding) + t
		if t == "" {
			out = append(out, line{code: true})
			continue
		}
		out = append(out, line{text: "  " + w.r.render(styleCode, t), code: true})
	}
	return out
}

func (w *walker) quote(n ast.Node, width int) []line {
	if width-2 < minWidth {
		return w.blocks(n, width)
	}
	bar := w.r.render(styleQuote, "│") + " "
	inner := w.blocks(n, width-2)
	for i := range inner {
		inner[i].text = bar + inner[i].text
	}
	return inner
}

func (w *walker) list(n *ast.List, width int) []line {
	items := 0
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		items++
	}
	marker := func(int) string { return "• " }
	if n.IsOrdered() {
		last := len(strconv.Itoa(n.Start + items - 1))
		marker = func(i int) string {
			s := strconv.Itoa(n.Start+i) + ". "
			return strings.Repeat(" ", last-len(s)+2) + s // right-aligned numbers
		}
	}
	var out []line
	i := 0
	for c := n.FirstChild(); c != nil; c, i = c.NextSibling(), i+1 {
		m := marker(i)
		indent := ansi.StringWidth(m)
		if width-indent < minWidth {
			indent = 0
		}
		lines := w.blocks(c, width-indent)
		if len(lines) == 0 {
			lines = []line{{}}
		}
		if i > 0 && !n.IsTight {
			out = append(out, line{})
		}
		for j, l := range lines {
			switch {
			case j == 0:
				l.text = m + l.text
			case l.text != "" || l.code:
				l.text = strings.Repeat(" ", indent) + l.text
			}
			out = append(out, l)
		}
	}
	return out
}

// inline flattens n's inline children into styled pieces.
func (w *walker) inline(n ast.Node, base style) []piece {
	var ps []piece
	var walk func(n ast.Node, st style)
	walk = func(n ast.Node, st style) {
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			switch c := c.(type) {
			case *ast.Text:
				v := c.Segment.Value(w.src)
				if !c.IsRaw() {
					v = unescape(v)
				}
				ps = append(ps, piece{string(v), st})
				switch {
				case c.HardLineBreak():
					ps = append(ps, piece{"\n", st})
				case c.SoftLineBreak():
					ps = append(ps, piece{" ", st})
				}
			case *ast.String:
				ps = append(ps, piece{string(c.Value), st})
			case *ast.CodeSpan:
				var b strings.Builder
				for t := c.FirstChild(); t != nil; t = t.NextSibling() {
					if t, ok := t.(*ast.Text); ok {
						b.Write(t.Segment.Value(w.src))
					}
				}
				ps = append(ps, piece{b.String(), st | styleCodeSpan})
			case *ast.Emphasis:
				if c.Level >= 2 {
					walk(c, st|styleBold)
				} else {
					walk(c, st|styleItalic)
				}
			case *east.Strikethrough:
				walk(c, st|styleStrike)
			case *ast.Link:
				before := len(ps)
				walk(c, st|styleLinkText)
				url := string(c.Destination)
				if url != "" && url != plain(ps[before:]) {
					ps = append(ps, piece{" ", st}, piece{url, st | styleURL})
				}
			case *ast.Image:
				ps = append(ps, piece{"[image", st})
				if alt := w.plainText(c); alt != "" {
					ps = append(ps, piece{": " + alt, st})
				}
				ps = append(ps, piece{"] ", st}, piece{string(c.Destination), st | styleURL})
			case *ast.AutoLink:
				ps = append(ps, piece{string(c.URL(w.src)), st | styleURL})
			case *ast.RawHTML:
				for i := range c.Segments.Len() {
					s := c.Segments.At(i)
					ps = append(ps, piece{string(s.Value(w.src)), st})
				}
			default:
				walk(c, st)
			}
		}
	}
	walk(n, base)
	return ps
}

// plainText is n's text without styles (an image's alt text).
func (w *walker) plainText(n ast.Node) string {
	return plain(w.inline(n, 0))
}

func plain(ps []piece) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.text)
	}
	return b.String()
}

// unescape resolves backslash escapes and entity references, as goldmark's
// HTML writer does for text.
func unescape(v []byte) []byte {
	return util.UnescapePunctuations(util.ResolveEntityNames(util.ResolveNumericReferences(v)))
}

// ExpandTabs replaces each tab with the spaces to the next stop.
func ExpandTabs(s string) string {
	if !strings.Contains(s, "\t") {
		return s
	}
	var b strings.Builder
	col := 0
	for _, r := range s {
		switch r {
		case '\t':
			n := TabWidth - col%TabWidth
			b.WriteString(strings.Repeat(" ", n))
			col += n
		case '\n':
			b.WriteRune(r)
			col = 0
		default:
			b.WriteRune(r)
			col++
		}
	}
	return b.String()
}
