package sessions

import (
	"bufio"
	"errors"
	"io"
	"strings"
)

// maxLine bounds one JSON line a parser decodes. Longer lines (a pasted
// image, a huge tool result) are skipped, so a transcript of any size is
// read in bounded memory.
const maxLine = 4 << 20

// lines calls fn with every line of r (without its newline), the last one
// too when it has none (it may be half written: the parser's JSON decode
// then fails and skips it). Lines over maxLine are skipped. fn returns false
// to stop.
func lines(r io.Reader, fn func(line []byte) bool) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	skipping := false
	for {
		chunk, err := br.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			if !skipping {
				if len(long)+len(chunk) > maxLine {
					long, skipping = long[:0], true
				} else {
					long = append(long, chunk...)
				}
			}
			continue
		case err != nil && !errors.Is(err, io.EOF):
			return err
		}
		line := chunk
		if len(long) > 0 {
			long = append(long, chunk...)
			line = long
		}
		if !skipping && len(line) > 0 && len(line) <= maxLine {
			if !fn(trimEOL(line)) {
				return nil
			}
		}
		long, skipping = long[:0], false
		if err != nil { // io.EOF
			return nil
		}
	}
}

func trimEOL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// shorten makes a title of s: one line of spaces, cut near n runes.
func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// titleRunes is how long a title may be.
const titleRunes = 80
