package markdown

import (
	"bytes"

	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// GFM's tables and strikethrough, parsed here rather than by goldmark's
// extension package: that package compiles linkify's large regular
// expressions at init (1–2 ms and 265 KB in every parley process, measured).
// The nodes are still goldmark's (extension/ast, which costs nothing).

// newParser is goldmark's CommonMark parser with tables and strikethrough.
func newParser() parser.Parser {
	return parser.NewParser(
		parser.WithBlockParsers(parser.DefaultBlockParsers()...),
		parser.WithInlineParsers(append(parser.DefaultInlineParsers(), util.Prioritized(strikethroughParser{}, 500))...),
		parser.WithParagraphTransformers(append(parser.DefaultParagraphTransformers(), util.Prioritized(tableTransformer{}, 200))...),
	)
}

// strikethroughParser reads ~text~ and ~~text~~ (not three or more tildes).
type strikethroughParser struct{}

type tildes struct{}

func (tildes) IsDelimiter(b byte) bool                             { return b == '~' }
func (tildes) CanOpenCloser(opener, closer *parser.Delimiter) bool { return opener.Char == closer.Char }
func (tildes) OnMatch(int) ast.Node                                { return east.NewStrikethrough() }

func (strikethroughParser) Trigger() []byte { return []byte{'~'} }

func (strikethroughParser) Parse(_ ast.Node, block text.Reader, pc parser.Context) ast.Node {
	before := block.PrecendingCharacter()
	line, segment := block.PeekLine()
	d := parser.ScanDelimiter(line, before, 1, tildes{})
	if d == nil || d.OriginalLength > 2 || before == '~' {
		return nil
	}
	d.Segment = segment.WithStop(segment.Start + d.OriginalLength)
	block.Advance(d.OriginalLength)
	pc.PushDelimiter(d)
	return d
}

func (strikethroughParser) CloseBlock(ast.Node, parser.Context) {}

// tableTransformer turns a paragraph whose second line (or later) is a
// delimiter row (| --- | :-: |) into text before it and a table: the line
// above is the header, the lines after are rows. Cells part at unescaped
// pipes; their text is parsed as inline Markdown afterwards.
type tableTransformer struct{}

func (tableTransformer) Transform(node *ast.Paragraph, reader text.Reader, _ parser.Context) {
	lines := node.Lines()
	src := reader.Source()
	for i := 1; i < lines.Len(); i++ {
		row := lines.At(i)
		aligns := delimiterRow(row.Value(src))
		if aligns == nil {
			continue
		}
		header := tableRow(lines.At(i-1), aligns, true, src)
		if header.ChildCount() != len(aligns) {
			return
		}
		table := east.NewTable()
		table.Alignments = aligns
		table.AppendChild(table, east.NewTableHeader(header))
		for j := i + 1; j < lines.Len(); j++ {
			table.AppendChild(table, tableRow(lines.At(j), aligns, false, src))
		}
		lines.SetSliced(0, i-1)
		parent := node.Parent()
		parent.InsertAfter(parent, node, table)
		if lines.Len() == 0 {
			parent.RemoveChild(parent, node)
		} else {
			last := lines.At(i - 2)
			last.Stop-- // the paragraph's last newline
			lines.Set(i-2, last)
		}
		return
	}
}

// delimiterRow reads a row of ---, :--, --: or :-: cells; nil if it is not one.
func delimiterRow(line []byte) []east.Alignment {
	line = bytes.TrimSpace(line)
	if !bytes.Contains(line, []byte{'-'}) || len(bytes.Trim(line, "|:- \t")) > 0 {
		return nil
	}
	cols := bytes.Split(line, []byte{'|'})
	if len(cols) > 0 && util.IsBlank(cols[0]) {
		cols = cols[1:]
	}
	if len(cols) > 0 && util.IsBlank(cols[len(cols)-1]) {
		cols = cols[:len(cols)-1]
	}
	if len(cols) == 0 || (len(cols) == 1 && !bytes.Contains(line, []byte{'|'})) {
		return nil // a lone "---" is a heading's underline or a rule
	}
	aligns := make([]east.Alignment, 0, len(cols))
	for _, c := range cols {
		c = bytes.TrimSpace(c)
		left, right := bytes.HasPrefix(c, []byte{':'}), bytes.HasSuffix(c, []byte{':'})
		dashes := bytes.Trim(c, ":")
		if len(dashes) == 0 || len(bytes.Trim(dashes, "-")) > 0 {
			return nil
		}
		switch {
		case left && right:
			aligns = append(aligns, east.AlignCenter)
		case left:
			aligns = append(aligns, east.AlignLeft)
		case right:
			aligns = append(aligns, east.AlignRight)
		default:
			aligns = append(aligns, east.AlignNone)
		}
	}
	return aligns
}

// tableRow parts a line into cells; a body row is cut or filled to the
// header's count of cells.
func tableRow(seg text.Segment, aligns []east.Alignment, header bool, src []byte) *east.TableRow {
	seg = seg.TrimLeftSpace(src)
	seg = seg.TrimRightSpace(src)
	line := seg.Value(src)
	pos, limit := 0, len(line)
	if limit > 0 && line[0] == '|' {
		pos++
	}
	if limit > pos && line[limit-1] == '|' && (limit < 2 || line[limit-2] != '\\') {
		limit--
	}
	row := east.NewTableRow(aligns)
	i := 0
	for ; pos < limit; i++ {
		if i >= len(aligns) && !header {
			return row
		}
		end := pos
		for end < limit && (line[end] != '|' || end > 0 && line[end-1] == '\\') {
			end++
		}
		cell := east.NewTableCell()
		if i < len(aligns) {
			cell.Alignment = aligns[i]
		}
		c := text.NewSegment(seg.Start+pos, seg.Start+end)
		c = c.TrimLeftSpace(src)
		cell.Lines().Append(c.TrimRightSpace(src))
		row.AppendChild(row, cell)
		pos = end + 1
	}
	for ; i < len(aligns); i++ {
		row.AppendChild(row, east.NewTableCell())
	}
	return row
}
