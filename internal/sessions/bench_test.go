package sessions

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// benchHome writes n Claude Code transcripts (the real golden, each with
// its own id, 10 turns more) into one project folder of a config dir.
func benchHome(b *testing.B, n int) (dir, root string) {
	b.Helper()
	g, err := os.ReadFile(golden)
	if err != nil {
		b.Fatal(err)
	}
	cwd := goldenCwdB(b)
	dir = b.TempDir()
	project := filepath.Join(dir, "projects", "p")
	if err := os.MkdirAll(project, 0o700); err != nil {
		b.Fatal(err)
	}
	var more bytes.Buffer
	for i := range 10 {
		fmt.Fprintf(&more, `{"type":"user","message":{"role":"user","content":"turn %d"},"cwd":%q,"timestamp":"2026-12-06T11:00:%02dZ"}`+"\n", i, cwd, i)
		fmt.Fprintf(&more, `{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"answer %d"}]},"timestamp":"2026-12-06T11:00:%02dZ"}`+"\n", i, i)
	}
	for i := range n {
		id := fmt.Sprintf("%08d-0000-4000-8000-000000000000", i)
		body := append(bytes.ReplaceAll(g, []byte(goldenID), []byte(id)), more.Bytes()...)
		if err := os.WriteFile(filepath.Join(project, id+".jsonl"), body, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	return dir, filepath.Dir(cwd)
}

func goldenCwdB(b *testing.B) string {
	f, err := os.Open(golden)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	s, err := readClaude("x", f)
	if err != nil || s.Cwd == "" {
		b.Fatalf("golden: %+v %v", s, err)
	}
	return s.Cwd
}

// BenchmarkList1000 lists 1,000 transcripts (each about 10 KB, 11 turns):
// cold (a new index: every file read) and warm (the index kept: every file
// only stat'ed). Run:
//
//	go test -run '^$' -bench BenchmarkList1000 -benchtime 10x ./internal/sessions/
func BenchmarkList1000(b *testing.B) {
	dir, root := benchHome(b, 1000)
	ctx := context.Background()
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			data := b.TempDir()
			b.StartTimer()
			x, err := Open(data, []string{root}, Claude{Dir: dir})
			if err != nil {
				b.Fatal(err)
			}
			l, err := x.List(ctx, Filter{})
			if err != nil || len(l) != 1000 {
				b.Fatalf("listed %d: %v", len(l), err)
			}
			x.Close()
		}
	})
	b.Run("warm", func(b *testing.B) {
		x, err := Open(b.TempDir(), []string{root}, Claude{Dir: dir})
		if err != nil {
			b.Fatal(err)
		}
		defer x.Close()
		if _, err := x.List(ctx, Filter{}); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			l, err := x.List(ctx, Filter{})
			if err != nil || len(l) != 1000 {
				b.Fatalf("listed %d: %v", len(l), err)
			}
		}
	})
	b.Run("reopened", func(b *testing.B) {
		data := b.TempDir()
		x, err := Open(data, []string{root}, Claude{Dir: dir})
		if err != nil {
			b.Fatal(err)
		}
		x.List(ctx, Filter{})
		x.Close()
		for b.Loop() { // a daemon restart: the index file read, no transcript
			x, err := Open(data, []string{root}, Claude{Dir: dir})
			if err != nil {
				b.Fatal(err)
			}
			if l, err := x.List(ctx, Filter{}); err != nil || len(l) != 1000 {
				b.Fatalf("listed %d: %v", len(l), err)
			}
			x.Close()
		}
	})
}
