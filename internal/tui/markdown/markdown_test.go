package markdown

import (
	"regexp"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// Each construct agents write, laid out (styles stripped) at a width.
func TestLayout(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, src string
		width     int
		want      string
	}{
		{"paragraph wraps at spaces", "one two three four five six", 13, "one two three\nfour five six"},
		{"lines of a paragraph join", "one\ntwo", 40, "one two"},
		{"hard break", "one  \ntwo", 40, "one\ntwo"},
		{"paragraphs apart", "one\n\ntwo", 40, "one\n\ntwo"},
		{"a word wider than the line is cut", "abcdefghij kl", 4, "abcd\nefgh\nij\nkl"},
		{"wide characters wrap by cells", "日本語 日本語", 7, "日本語\n日本語"},
		{"headings", "# Title\n\n## Sub\n\n###### Six", 40, "# Title\n\n## Sub\n\n###### Six"},
		{"setext heading", "Title\n=====", 40, "# Title"},
		{"emphasis", "Some **bold**, *italic* and ~~gone~~ words", 80, "Some bold, italic and gone words"},
		{"inline code", "run `go test ./...` now", 80, "run go test ./... now"},
		{"escapes and entities", `\*not em\* &amp; &#35;`, 80, "*not em* & #"},
		{"link with its URL", "see [the docs](https://x.example/d) here", 80, "see the docs https://x.example/d here"},
		{"link whose text is the URL", "[https://x.example](https://x.example)", 80, "https://x.example"},
		{"autolink", "at <https://x.example/a>.", 80, "at https://x.example/a."},
		{"image", "![a cat](cat.png)", 80, "[image: a cat] cat.png"},
		{"fenced code verbatim, not wrapped", "```go\nfunc f() {\n\treturn // a comment longer than the width\n}\n```", 20,
			"  func f() {\n      return // a comment longer than the width\n  }"},
		{"code keeps blank lines and markup", "```\na  **b**\n\n# c\n```", 40, "  a  **b**\n\n  # c"},
		{"indented code", "text\n\n    code  here\n    more", 40, "text\n\n  code  here\n  more"},
		{"bullets", "- one\n- two\n* three", 40, "• one\n• two\n\n• three"},
		{"nested bullets", "- one\n  - inner\n    - deep\n- two", 40, "• one\n  • inner\n    • deep\n• two"},
		{"loose list", "- one\n\n- two", 40, "• one\n\n• two"},
		{"list item wraps under its text", "- one two three four", 10, "• one two\n  three\n  four"},
		{"numbered from its start", "3. three\n4. four", 40, "3. three\n4. four"},
		{"numbers right-aligned", "9. nine\n10. ten", 40, " 9. nine\n10. ten"},
		{"numbered with bullets inside", "1. one\n   - a\n2. two", 40, "1. one\n   • a\n2. two"},
		{"code in a list item", "- step:\n\n  ```\n  make\n  ```", 40, "• step:\n\n    make"},
		{"block quote wraps inside its bar", "> one two three four", 12, "│ one two\n│ three four"},
		{"nested quote", "> a\n>> b", 40, "│ a\n│\n│ │ b"},
		{"quote with a list", "> - a\n> - b", 40, "│ • a\n│ • b"},
		{"rule", "a\n\n---\n\nb", 10, "a\n\n──────────\n\nb"},
		{"table aligned", "| a | bee | n |\n|---|:---:|--:|\n| long | x | 7 |\n| y | z | 10 |", 40,
			"a    │ bee │  n\n─────┼─────┼───\nlong │  x  │  7\ny    │  z  │ 10"},
		{"table wider than the line wraps its widest column", "| k | v |\n|---|---|\n| a | one two three |", 12,
			"k │ v\n──┼─────────\na │ one two\n  │ three"},
		{"table without outer pipes, after text", "intro\na | b\n--- | ---\n1 | 2", 40, "intro\n\na │ b\n──┼──\n1 │ 2"},
		{"table rows cut or filled to the header", "| a | b |\n|---|---|\n| 1 |\n| 1 | 2 | 3 |", 40, "a │ b\n──┼──\n1 │\n1 │ 2"},
		{"escaped pipe in a cell", "| a |\n|---|\n| x \\| y |", 40, "a\n─────\nx | y"},
		{"not a table: delimiter cells differ from the header's", "| a | b |\n|---|\n| 1 | 2 |", 80, "| a | b | |---| | 1 | 2 |"},
		{"one tilde strikes too, three do not", "~a~ ~~~b~~~", 40, "a ~~~b~~~"},
		{"table cells with markup", "| x |\n|---|\n| **b** `c` |", 40, "x\n───\nb c"},
		{"html kept as written", "<div>\nhi\n</div>", 40, "  <div>\n  hi\n  </div>"},
		{"empty", "", 40, ""},
	}
	r := New(false)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ansi.Strip(r.Render(c.src, c.width))
			got = trimLines(got)
			if got != c.want {
				t.Errorf("Render(%q, %d):\ngot\n%s\nwant\n%s\n(%q)", c.src, c.width, got, c.want, got)
			}
		})
	}
}

// trimLines drops the padding a table's last column carries.
func trimLines(s string) string {
	ls := strings.Split(s, "\n")
	for i, l := range ls {
		ls[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(ls, "\n")
}

// Bold, italics, strikethrough and links keep their attributes without color.
func TestAttributes(t *testing.T) {
	t.Parallel()
	cases := []struct{ src, want string }{
		{"**b**", "\x1b[1mb\x1b[m"},
		{"*i*", "\x1b[3mi\x1b[m"},
		{"~~s~~", "\x1b[9ms\x1b[m"},
		{"***bi***", "\x1b[1;3mbi\x1b[m"},
		{"**two words**", "\x1b[1mtwo words\x1b[m"},
		{"[t](u)", "\x1b[1mt\x1b[m \x1b[4mu\x1b[m"},
		{"## h", "\x1b[1m## h\x1b[m"},
	}
	r := New(false)
	for _, c := range cases {
		if got := r.Render(c.src, 40); got != c.want {
			t.Errorf("Render(%q) = %q; want %q", c.src, got, c.want)
		}
	}
}

var colorSGR = regexp.MustCompile(`\x1b\[[0-9;]*?(?:^|;|\[)(?:3[0-8]|4[0-8]|9[0-7]|10[0-7])(?:;[0-9;]*)?m`)

const everything = "# T\n\n## S\n\n**b** *i* ~~s~~ `c` [l](https://u) <https://a>\n\n> q\n\n- x\n\n1. y\n\n```\ncode\n```\n\n---\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"

// NO_COLOR: no color codes at all, while the color renderer colors.
func TestNoColor(t *testing.T) {
	t.Parallel()
	if out := New(false).Render(everything, 40); colorSGR.MatchString(out) {
		t.Errorf("no-color output has color codes:\n%q", out)
	}
	out := New(true).Render(everything, 40)
	if !colorSGR.MatchString(out) {
		t.Errorf("color output has no color codes:\n%q", out)
	}
	if a, b := ansi.Strip(out), ansi.Strip(New(false).Render(everything, 40)); strings.ReplaceAll(a, " T ", "# T") != b {
		t.Errorf("color changes the layout (but for the title's bar):\n%s\n---\n%s", a, b)
	}
}

// Any input renders without a panic, and every line but a code block's fits
// (in two cells or more: a wide character takes two).
func FuzzRender(f *testing.F) {
	for _, s := range []string{everything, "> > > > > > > > > > deep", "- - - - - - - - x", "| a | b | c | d | e | f | g |\n|-|-|-|-|-|-|-|\n| 1 | 2 | 3 | 4 | 5 | 6 | 7 |", "日本語の文章 😀😀😀", "a\tb\n\tc", "1. x\n   1. y\n      1. z"} {
		f.Add(s, uint8(20))
	}
	rs := []*Renderer{New(false), New(true)}
	f.Fuzz(func(t *testing.T, src string, w uint8) {
		width := int(w%120) + 2
		for _, r := range rs {
			for _, l := range r.lines(src, width) {
				if !l.code && ansi.StringWidth(l.text) > width {
					t.Fatalf("line wider than %d: %q", width, l.text)
				}
			}
		}
	})
}

func BenchmarkRender(b *testing.B) {
	long := strings.Repeat("x", 100_000)
	doc := strings.Repeat(everything, 200)
	r := New(true)
	b.Run("a 100 KB word", func(b *testing.B) {
		for b.Loop() {
			r.Render(long, 80)
		}
	})
	b.Run("a 30 KB document", func(b *testing.B) {
		for b.Loop() {
			r.Render(doc, 80)
		}
	})
}
