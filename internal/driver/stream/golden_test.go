package stream

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
)

var update = flag.Bool("update", false, "rewrite the .golden files")

// replay feeds captured stdout lines to a session with no process behind it
// and returns the sink's calls. A line "#cancel" marks where parley sent an
// interrupt, "#prompt" where it wrote a prompt.
func replay(t testing.TB, data []byte) *recSink {
	sink := &recSink{}
	s := newSession(sink, slog.New(slog.DiscardHandler), false)
	go func() { // stands in for the stdin writer
		for {
			select {
			case req := <-s.writes:
				if req.claimed.CompareAndSwap(false, true) {
					req.done <- nil
				}
			case <-s.gone:
				return
			}
		}
	}()
	defer close(s.gone)
	s.turns = bytes.Count(data, []byte(`{"type":"result"`))
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, MaxLineBytes)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "#cancel") {
			s.mu.Lock()
			s.cancelled = true
			s.mu.Unlock()
			continue
		}
		if strings.HasPrefix(sc.Text(), "#prompt") {
			s.mu.Lock()
			s.proof.written = append(s.proof.written, &sent{text: strings.TrimPrefix(sc.Text(), "#prompt ")})
			s.mu.Unlock()
			continue
		}
		s.handleLine(sc.Bytes())
	}
	return sink
}

// render writes the calls one per line, as the golden files hold them.
func render(t testing.TB, r *recSink) []byte {
	var buf bytes.Buffer
	for _, c := range r.snapshot() {
		if c.payload == nil {
			buf.WriteString(c.what + "\n")
			continue
		}
		if cs, ok := c.payload.(chat.Commands); ok {
			// Claude Code's command list is long and changes with skills; count it.
			fmt.Fprintf(&buf, "commands (%d)\n", len(cs.Commands))
			continue
		}
		b, err := json.Marshal(c.payload)
		if err != nil {
			t.Fatal(err)
		}
		buf.WriteString(c.what + " " + string(b) + "\n")
	}
	return buf.Bytes()
}

func TestGolden(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/claude-2.1.197/*.jsonl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no captured lines: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got := render(t, replay(t, data))
			golden := strings.TrimSuffix(f, ".jsonl") + ".golden"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("calls differ from %s\ngot:\n%s\nwant:\n%s", golden, got, want)
			}
		})
	}
}

// FuzzDecodeLine feeds arbitrary stdout lines through the decoder and the
// mapping: nothing may panic, and a decoded line always has a type.
func FuzzDecodeLine(f *testing.F) {
	files, _ := filepath.Glob("testdata/claude-2.1.197/*.jsonl")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, l := range bytes.Split(data, []byte("\n")) {
			if len(l) > 0 && l[0] == '{' {
				f.Add(l)
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := decodeLine(b)
		if err == nil && l.Type == "" {
			t.Fatalf("decoded a line with no type: %q", b)
		}
		sink := replay(t, b)
		_ = render(t, sink)
	})
}
