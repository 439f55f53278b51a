package transcript

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/testkit"
)

// testdata/claude-2.1.197-session.jsonl is a real transcript Claude Code 2.1.197
// wrote in a tmux pane against the scripted model API: a Bash tool use with
// permission, two AskUserQuestion pickers (a label, free text) and a multi-select.
func goldenLines(t *testing.T) [][]byte {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "claude-2.1.197-session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		out = append(out, append([]byte(nil), sc.Bytes()...))
	}
	return out
}

func TestParserGolden(t *testing.T) {
	t.Parallel()
	p := NewParser()
	var got []string
	for _, l := range goldenLines(t) {
		ps, err := p.Line(l)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range ps {
			switch v := x.(type) {
			case chat.AgentChunk:
				got = append(got, "text:"+v.Text)
			case chat.ToolCall:
				got = append(got, "tool:"+v.Title+":"+v.Kind)
			case chat.ToolCallUpdate:
				got = append(got, "result:"+v.Status+":"+first(v.Output, 40))
			}
		}
	}
	want := []string{
		"text:Listing.",
		"tool:touch made-by-bash:execute", // the same title as on the stream transport
		"result:completed:(Bash completed with no output)",
		"text:The command ran.",
		"tool:AskUserQuestion:other",
		`result:completed:Your questions have been answered: "Whic`,
		"text:Thanks for the answer.",
		"tool:AskUserQuestion:other",
		`result:completed:Your questions have been answered: "Whic`,
		"text:Thanks for the answer.",
		"tool:AskUserQuestion:other",
		`result:completed:Your questions have been answered: "Whic`,
		"text:Thanks for the answer.",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !p.Answered("toolu_standin_0002_665021") {
		t.Error("the first question's tool result is not seen as its answer")
	}
	if p.Answered("toolu_never") {
		t.Error("an unknown tool use reads as answered")
	}
}

func first(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// Records sharing a message id, or written twice, are reported once.
func TestParserDedupes(t *testing.T) {
	t.Parallel()
	p := NewParser()
	lines := []string{
		`{"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"Hi."}]}}`,
		`{"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"tu1","name":"Read","input":{"file_path":"/a"}}]}}`,
		`{"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"Hi."}]}}`,
		`{"type":"assistant","isSidechain":true,"message":{"id":"m2","role":"assistant","content":[{"type":"text","text":"subagent"}]}}`,
		`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu1","content":[{"type":"text","text":"file"}],"is_error":true}]}}`,
		`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu1","content":"file"}]}}`,
	}
	var n [4]int
	for _, l := range lines {
		ps, err := p.Line([]byte(l))
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range ps {
			switch v := x.(type) {
			case chat.AgentChunk:
				n[0]++
			case chat.ToolCall:
				n[1]++
				if v.Kind != "read" {
					t.Errorf("Read kind: got %q, want read", v.Kind)
				}
			case chat.ToolCallUpdate:
				n[2]++
				if v.Status != "failed" || v.Output != "file" {
					t.Errorf("result: got %+v, want failed with output file", v)
				}
			default:
				n[3]++
			}
		}
	}
	if n != [4]int{1, 1, 1, 0} {
		t.Errorf("got text/tool/result/other %v, want [1 1 1 0]", n)
	}
}

type collect struct {
	mu    sync.Mutex
	ps    []chat.Payload
	turns int
}

func (c *collect) add(p chat.Payload) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := p.(TurnEnd); ok {
		c.turns++
		return
	}
	c.ps = append(c.ps, p)
}

func (c *collect) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ps)
}

// The follower picks up a file created after it started, and lines as they are appended.
func TestFollow(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "projects", "x", "s.jsonl")
	var c collect
	f, err := Follow(path, 0, time.Time{}, c.add, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines := goldenLines(t)
	fh, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	for _, l := range lines[:10] {
		fh.Write(append(l, '\n'))
	}
	testkit.Eventually(t, 5*time.Second, func() bool { return c.len() == 4 }, "want 4 updates from the first 10 lines")
	for _, l := range lines[10:] {
		fh.Write(append(l, '\n'))
	}
	testkit.Eventually(t, 5*time.Second, func() bool { return c.len() == 13 }, "want 13 updates in all")
	c.mu.Lock()
	turns := c.turns
	c.mu.Unlock()
	if turns != 4 {
		t.Errorf("turn ends: got %d, want 4 (one turn_duration record per turn)", turns)
	}
	if !f.Answered("toolu_standin_0004_97425") {
		t.Error("the multi-select question reads as unanswered")
	}
}

// Adopting: what the file already holds is remembered, not re-sent.
func TestFollowSkipExisting(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	var b strings.Builder
	for _, l := range goldenLines(t) {
		b.Write(l)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	var c collect
	f, err := Follow(path, SkipAll, time.Time{}, c.add, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Sync()
	if c.len() != 0 {
		t.Errorf("got %d updates from existing lines, want 0", c.len())
	}
	if !f.Answered("toolu_standin_0002_665021") {
		t.Error("existing answers are not remembered")
	}
}

func TestFindByPrompt(t *testing.T) {
	t.Parallel()
	cwd := "/tmp/tx/cwd"
	home := t.TempDir()
	dir := ProjectDir(home, cwd)
	if want := filepath.Join(home, "projects", "-tmp-tx-cwd"); dir != want {
		t.Fatalf("ProjectDir: got %q, want %q", dir, want)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, l := range goldenLines(t) {
		b.Write(l)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(filepath.Join(dir, "golden.jsonl"), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	// A decoy written later that never had the prompt.
	if err := os.WriteFile(filepath.Join(dir, "other.jsonl"), []byte(`{"type":"user","message":{"role":"user","content":"something else"},"timestamp":"2026-12-02T17:30:00Z"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A prompt written as text blocks (as with an attachment beside it).
	blocks := `{"type":"user","message":{"role":"user","content":[{"type":"text","text":"in blocks"}]},"timestamp":"2026-12-02T17:31:00Z"}` + "\n" +
		`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"ok"}]},"timestamp":"2026-12-02T17:31:01Z"}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "blocks.jsonl"), []byte(blocks), 0o600); err != nil {
		t.Fatal(err)
	}
	since, _ := time.Parse(time.RFC3339, "2026-12-02T17:20:00Z")
	tests := []struct {
		text  string
		since time.Time
		found bool
		file  string
	}{
		{text: "in blocks", since: since, found: true, file: "blocks.jsonl"},
		{text: "askmulti", since: since, found: true},
		{text: "ask", since: since, found: true},
		{text: "never sent", since: since, found: false},
		{text: "askmulti", since: since.Add(2 * time.Hour), found: false},
	}
	for _, tt := range tests {
		path, at, ok := FindByPrompt(dir, tt.text, tt.since)
		if ok != tt.found {
			t.Errorf("FindByPrompt(%q): found %v, want %v", tt.text, ok, tt.found)
			continue
		}
		if !ok {
			continue
		}
		want := cmp.Or(tt.file, "golden.jsonl")
		if filepath.Base(path) != want {
			t.Errorf("FindByPrompt(%q): got %s, want %s", tt.text, path, want)
		}
		// The time is the newest prompt record's own stamp.
		if stamp := newestPromptStamp(t, path, tt.text); !at.Equal(stamp) {
			t.Errorf("FindByPrompt(%q): got time %v, want the record's %v", tt.text, at, stamp)
		}
	}
}

// newestPromptStamp is the timestamp of the last user record in path whose
// text is text.
func newestPromptStamp(t *testing.T, path, text string) time.Time {
	t.Helper()
	b, _ := os.ReadFile(path)
	var at time.Time
	for line := range bytes.Lines(b) {
		var r record
		if json.Unmarshal(line, &r) == nil && r.Type == "user" && holdsPrompt(&r.Message, text) {
			at, _ = time.Parse(time.RFC3339Nano, r.Timestamp)
		}
	}
	return at
}

// turnTwo is the golden session split for the out-of-order tests: turn one
// (history), turn two's prompt record, and the rest of turn two.
func turnTwo(t *testing.T) (history [][]byte, prompt []byte, reply [][]byte, at time.Time) {
	t.Helper()
	lines := goldenLines(t)
	// 0-10: turn one ("run ls" … turn_duration); 11: a file-history
	// snapshot; 12: the prompt "ask"; 13-16: its reply and turn_duration.
	var r record
	if err := json.Unmarshal(lines[12], &r); err != nil || !holdsPrompt(&r.Message, "ask") {
		t.Fatalf("golden line 13 is not the prompt \"ask\": %s", lines[12])
	}
	at, _ = time.Parse(time.RFC3339Nano, r.Timestamp)
	return lines[:12], lines[12], lines[13:17], at
}

func joinLines(parts ...[][]byte) []byte {
	var b bytes.Buffer
	for _, p := range parts {
		for _, l := range p {
			b.Write(l)
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// Claude Code may save a session for the first time out of order: the reply
// and the turn's end above the prompt. Following from the prompt's time (not
// its place) finds them, and the earlier turn stays history.
func TestFollowSinceOutOfOrder(t *testing.T) {
	t.Parallel()
	history, prompt, reply, at := turnTwo(t)
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, joinLines(history, reply, [][]byte{prompt}), 0o600); err != nil {
		t.Fatal(err)
	}
	var c collect
	f, err := Follow(path, 0, at, c.add, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Sync()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.ps) != 3 || c.turns != 1 {
		t.Fatalf("got %d updates and %d turn ends, want turn two's 3 (question, answer, text) and 1: %+v", len(c.ps), c.turns, c.ps)
	}
	if chunk, ok := c.ps[2].(chat.AgentChunk); !ok || chunk.Text != "Thanks for the answer." {
		t.Errorf("last update %+v, want turn two's text", c.ps[2])
	}
}

// A file rewritten under the follower (another order, another inode) is read
// again from its start: what is new is emitted once, what was seen is not
// emitted again, and an old turn's end does not end the turn in progress.
func TestFollowRewrittenFile(t *testing.T) {
	t.Parallel()
	history, prompt, reply, at := turnTwo(t)
	for _, tc := range []struct {
		name                    string
		since                   time.Time
		before, after, turnsNow int
	}{
		// An adopted session: turn one is history.
		{name: "since the prompt", since: at, before: 0, after: 3, turnsNow: 1},
		// parley's own session, followed from its start: turn one was shown.
		{name: "from the start", before: 4, after: 7, turnsNow: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "s.jsonl")
			if err := os.WriteFile(path, joinLines(history, [][]byte{prompt}), 0o600); err != nil {
				t.Fatal(err)
			}
			var c collect
			f, err := Follow(path, 0, tc.since, c.add, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			f.Sync()
			if n := c.len(); n != tc.before {
				t.Fatalf("before the reply: %d updates, want %d", n, tc.before)
			}
			tmp := filepath.Join(dir, "s.jsonl.tmp")
			if err := os.WriteFile(tmp, joinLines(history[:2], reply, history[2:], [][]byte{prompt}), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
			testkit.Eventually(t, 5*time.Second, func() bool { return c.len() == tc.after },
				"turn two's updates after the rewrite")
			f.Sync()
			c.mu.Lock()
			defer c.mu.Unlock()
			if len(c.ps) != tc.after || c.turns != tc.turnsNow {
				t.Fatalf("got %d updates and %d turn ends, want %d and %d", len(c.ps), c.turns, tc.after, tc.turnsNow)
			}
		})
	}
}
