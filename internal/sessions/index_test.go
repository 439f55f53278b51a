package sessions

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/testkit"
)

// golden is the transcript the real `claude -p "first prompt here"` wrote
// (TestClaudePrintSessionIsFound with PARLEY_CAPTURE=1).
var golden = filepath.Join("testdata", "claude-"+testkit.ClaudeVersion+"-print.jsonl")

const goldenID = "004e51df-beba-44ee-96d7-de365b89c6d9"

// goldenCwd is the folder the golden session ran in, as it recorded it.
func goldenCwd(t *testing.T) string {
	t.Helper()
	s, err := Claude{}.Read(golden)
	if err != nil || s.Cwd == "" {
		t.Fatalf("golden transcript: %+v %v", s, err)
	}
	return s.Cwd
}

// counting is a FileSource that counts the files it reads.
type counting struct {
	FileSource
	reads atomic.Int32
}

func (c *counting) Read(path string) (Session, error) {
	c.reads.Add(1)
	return c.FileSource.Read(path)
}

// claudeHome makes a Claude Code config folder holding the given
// transcripts (file name → content) in the project folder of cwd.
func claudeHome(t *testing.T, cwd string, files map[string][]byte) (dir, project string) {
	t.Helper()
	dir = t.TempDir()
	project = filepath.Join(dir, "projects", strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, cwd))
	if err := os.MkdirAll(project, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(project, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir, project
}

func readGolden(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The real program's transcript reads as its id, folder, first prompt, one
// turn and the time of its last record.
func TestClaudeGoldenTranscript(t *testing.T) {
	_, project := claudeHome(t, goldenCwd(t), map[string][]byte{goldenID + ".jsonl": readGolden(t)})
	s, err := Claude{}.Read(filepath.Join(project, goldenID+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	want := time.Date(2026, 12, 6, 10, 36, 23, 0, time.UTC)
	if s.ID != goldenID || s.Title != "first prompt here" || s.Turns != 1 || s.UpdatedAt.Before(want) || !filepath.IsAbs(s.Cwd) {
		t.Fatalf("read %+v", s)
	}
}

// A listing re-reads only the transcripts that changed since the last one,
// also after the index is opened again; a removed transcript leaves the list.
func TestIndexRereadsOnlyChangedFiles(t *testing.T) {
	cwd := goldenCwd(t)
	g := readGolden(t)
	second := bytes.ReplaceAll(g, []byte(goldenID), []byte("11111111-2222-3333-4444-555555555555"))
	dir, project := claudeHome(t, cwd, map[string][]byte{
		goldenID + ".jsonl":                          g,
		"11111111-2222-3333-4444-555555555555.jsonl": second,
	})
	data := t.TempDir()
	src := &counting{FileSource: Claude{Dir: dir}}
	x, err := Open(data, []string{filepath.Dir(cwd)}, src)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	list := func(x *Index) []Session {
		t.Helper()
		l, err := x.List(ctx, Filter{})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	if l := list(x); len(l) != 2 || src.reads.Load() != 2 {
		t.Fatalf("first listing: %d sessions, %d reads", len(l), src.reads.Load())
	}
	if l := list(x); len(l) != 2 || src.reads.Load() != 2 {
		t.Fatalf("second listing re-read: %d sessions, %d reads", len(l), src.reads.Load())
	}
	// A turn more in one transcript: only it is read again.
	f, err := os.OpenFile(filepath.Join(project, goldenID+".jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"type":"user","message":{"role":"user","content":"and more"},"cwd":"` + cwd + `","timestamp":"2027-01-01T00:00:00Z"}` + "\n")
	f.Close()
	l := list(x)
	if src.reads.Load() != 3 || len(l) != 2 || l[0].ID != goldenID || l[0].Turns != 2 {
		t.Fatalf("after a turn: %d reads, %+v", src.reads.Load(), l)
	}
	x.Close()

	src2 := &counting{FileSource: Claude{Dir: dir}}
	y, err := Open(data, []string{filepath.Dir(cwd)}, src2)
	if err != nil {
		t.Fatal(err)
	}
	defer y.Close()
	if l := list(y); len(l) != 2 || src2.reads.Load() != 0 || l[0].Turns != 2 {
		t.Fatalf("reopened: %d reads, %+v", src2.reads.Load(), l)
	}
	os.Remove(filepath.Join(project, goldenID+".jsonl"))
	if l := list(y); len(l) != 1 || l[0].ID == goldenID {
		t.Fatalf("after removing one: %+v", l)
	}
}

// A half-written last line, a file that is not JSON at all and a huge
// transcript (a 100 MB pasted line among many turns) each list with what
// could be read, beside the good one, and none fails the list.
func TestIndexListsDamagedTranscripts(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 100 MB file")
	}
	cwd := goldenCwd(t)
	g := readGolden(t)
	torn := append(bytes.ReplaceAll(g, []byte(goldenID), []byte("22222222-0000-0000-0000-000000000000")), []byte(`{"type":"user","message":{"role":"user","content":"half wr`)...)
	dir, project := claudeHome(t, cwd, map[string][]byte{
		goldenID + ".jsonl":                          g,
		"22222222-0000-0000-0000-000000000000.jsonl": torn,
		"33333333-0000-0000-0000-000000000000.jsonl": []byte("\x00\x01 not json at all\n{{{\n"),
	})
	// The huge one: the golden's first records, a 100 MB line, then 1,000 turns.
	huge, err := os.Create(filepath.Join(project, "44444444-0000-0000-0000-000000000000.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	huge.Write(bytes.ReplaceAll(g, []byte(goldenID), []byte("44444444-0000-0000-0000-000000000000")))
	huge.WriteString(`{"type":"user","message":{"role":"user","content":"`)
	huge.Write(bytes.Repeat([]byte("A"), 100<<20))
	huge.WriteString("\"}}\n")
	turn := `{"type":"user","message":{"role":"user","content":"again"},"cwd":"` + cwd + `"}` + "\n"
	huge.WriteString(strings.Repeat(turn, 1000))
	if err := huge.Close(); err != nil {
		t.Fatal(err)
	}

	x, err := Open(t.TempDir(), []string{filepath.Dir(cwd)}, Claude{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	l, err := x.List(context.Background(), Filter{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Session{}
	for _, s := range l {
		got[s.ID[:8]] = s
	}
	if len(l) != 4 {
		t.Fatalf("listed %+v", l)
	}
	if s := got["22222222"]; s.Turns != 1 || s.Title != "first prompt here" || s.Cwd != cwd {
		t.Fatalf("half-written: %+v", s)
	}
	if s := got["33333333"]; s.Turns != 0 || s.Cwd != cwd {
		t.Fatalf("not JSON: %+v (its folder's cwd, from its neighbours)", s)
	}
	if s := got["44444444"]; s.Turns != 1001 || s.Title != "first prompt here" {
		t.Fatalf("huge: turns %d, title %q", s.Turns, s.Title)
	}
}

// Sessions parley's threads hold are left out unless All; Lookup finds them.
func TestIndexLeavesOutHeldSessions(t *testing.T) {
	cwd := goldenCwd(t)
	dir, _ := claudeHome(t, cwd, map[string][]byte{goldenID + ".jsonl": readGolden(t)})
	x, err := Open(t.TempDir(), []string{filepath.Dir(cwd)}, Claude{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	x.SetHeld(func(context.Context) (map[string]bool, error) { return map[string]bool{goldenID: true}, nil })
	ctx := context.Background()
	if l, err := x.List(ctx, Filter{}); err != nil || len(l) != 0 {
		t.Fatalf("held, listed: %+v %v", l, err)
	}
	if l, err := x.List(ctx, Filter{All: true}); err != nil || len(l) != 1 {
		t.Fatalf("held, listed with All: %+v %v", l, err)
	}
	if _, ok, err := x.Lookup(ctx, "claude", goldenID); !ok || err != nil {
		t.Fatalf("held, lookup: %v %v", ok, err)
	}
	x.SetNode("laptop")
	if l, err := x.List(ctx, Filter{All: true, Machine: "desk"}); err != nil || len(l) != 0 {
		t.Fatalf("another machine's listing: %+v %v", l, err)
	}
	if l, err := x.List(ctx, Filter{All: true, Machine: "laptop"}); err != nil || len(l) != 1 || l[0].Node != "" {
		t.Fatalf("this machine's listing: %+v %v", l, err)
	}
}
