package irc

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"unicode"
)

func TestLinesNeutraliseCTCPAndSplitBreaks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{"\x01DCC SEND evil 2130706433 6667 1\x01", []string{"␁DCC SEND evil 2130706433 6667 1␁"}},
		{"mid \x01ACTION waves\x01 text", []string{"mid ␁ACTION waves␁ text"}},
		{"one\rtwo", []string{"one", "two"}},
		{"one\r\ntwo\nthree", []string{"one", "two", "three"}},
		{"before\x00after", []string{"before", "after"}},
		{"\r\r\n\x00", nil},
		{"\x02bold\x02 \x0304red\x03", []string{"\x02bold\x02 \x0304red\x03"}},
	}
	for _, tt := range tests {
		if got := Lines(tt.in, 100); strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("Lines(%q): got %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestSayNeverRefused: what the bridge hands the transport always goes out,
// every word of it, as plain PRIVMSGs on the wire.
func TestSayNeverRefused(t *testing.T) {
	t.Parallel()
	client, server := net.Pipe()
	t.Cleanup(func() { client.Close(); server.Close() })
	tr := transport{c: &Conn{nc: client}, limit: 20}
	done := make(chan error, 1)
	go func() {
		done <- tr.Say(t.Context(), "#a", "\x01DCC SEND x\x01\rsecond\x00third "+strings.Repeat("\x01", 10))
		client.Close()
	}()
	var lines []string
	sc := bufio.NewScanner(server)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := <-done; err != nil {
		t.Fatalf("Say: %v", err)
	}
	want := []string{"PRIVMSG #a :␁DCC SEND x␁", "PRIVMSG #a second", "PRIVMSG #a third", "PRIVMSG #a ␁␁␁␁␁␁", "PRIVMSG #a ␁␁␁␁"}
	if strings.Join(lines, "|") != strings.Join(want, "|") {
		t.Errorf("on the wire: got %q, want %q", lines, want)
	}
}

// FuzzLines: no line Lines returns can end or break an IRC line or start a
// CTCP request, none is over the limit, and no word of the text is dropped.
func FuzzLines(f *testing.F) {
	for _, s := range []string{"\x01DCC SEND a 1 2 3\x01", "a\rb", "a\r\nb\x00c", "ééé\x01é", "\xff\xfe\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80", "plain words here"} {
		f.Add(s, 8)
	}
	f.Fuzz(func(t *testing.T, text string, limit int) {
		limit = 4 + abs(limit)%500
		got := Lines(text, limit)
		for _, l := range got {
			if strings.ContainsAny(l, "\r\n\x00\x01") {
				t.Fatalf("line %q holds CR, LF, NUL or \\x01", l)
			}
			if len(l) > limit {
				t.Fatalf("line %q is %d bytes, over %d", l, len(l), limit)
			}
		}
		// Chunking drops only the white space it breaks at; \x01 is shown as ␁.
		// (Lines are joined by a break so bytes that are not UTF-8 on either
		// side of one do not read as one rune.)
		if want, have := visible(strings.ReplaceAll(text, "\x01", "␁")), visible(strings.Join(got, "\n")); want != have {
			t.Fatalf("text lost: got %q, want %q", have, want)
		}
	})
}

func visible(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || r == 0 {
			return -1
		}
		return r
	}, s)
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
