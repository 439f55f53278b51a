package transcript

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/testkit"
)

// testdata/gemini-0.61.0-tui.jsonl is the chat Gemini CLI 0.61.0 wrote in a
// tmux pane against the scripted model API (TestAdoptGeminiTUIInATmuxPane):
// "hello" typed in the pane, then from parley "hello", "make the file" and
// "make another" (each a shell command, its message written again under the
// same id when the command ended, then "The command ran.").
func geminiGolden(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "gemini-"+testkit.GeminiVersion+"-tui.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const geminiAnswer = "Gemini, scripted, in several pieces."

// texts are the agent words of ps, in order; anything else but tool
// events (tools) fails the test.
func texts(t *testing.T, ps []chat.Payload) []string {
	t.Helper()
	var out []string
	for _, p := range ps {
		switch p.(type) {
		case chat.ToolCall, chat.ToolCallUpdate:
			continue
		}
		c, ok := p.(chat.AgentChunk)
		if !ok {
			t.Fatalf("an update that is not agent text: %#v", p)
		}
		if c.MessageID == "" {
			t.Fatalf("agent text without its message id: %#v", c)
		}
		out = append(out, c.Text)
	}
	return out
}

// tools are the tool events of ps, in order, in words.
func tools(ps []chat.Payload) []string {
	var out []string
	for _, p := range ps {
		switch v := p.(type) {
		case chat.ToolCall:
			out = append(out, "call "+v.ToolCallID+" "+v.Kind+" "+v.Status+": "+v.Title)
		case chat.ToolCallUpdate:
			out = append(out, "end "+v.ToolCallID+" "+v.Status+": "+strings.TrimSpace(v.Output))
		}
	}
	return out
}

// The golden chat's two shell commands, as the parser reports them.
var geminiTools = []string{
	"call run_shell_command__run_shell_command_1796587970993_0 execute completed: touch made-by-gemini",
	"end run_shell_command__run_shell_command_1796587970993_0 completed: <untrusted_context>\nOutput: (empty)\nProcess Group PGID: 18875\n</untrusted_context>",
	"call run_shell_command__run_shell_command_1796587973894_0 execute completed: touch made-again",
	"end run_shell_command__run_shell_command_1796587973894_0 completed: <untrusted_context>\nOutput: (empty)\nProcess Group PGID: 19010\n</untrusted_context>",
}

// Every answer of the chat is agent text once, in order, though Gemini
// writes a message again when its tool calls end; prompts, the hidden
// context and the commands' results are not agent text.
func TestGeminiParserGolden(t *testing.T) {
	t.Parallel()
	p := NewGeminiParser()
	var ps []chat.Payload
	for line := range bytes.Lines(geminiGolden(t)) {
		got, err := p.Line(line)
		if err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		ps = append(ps, got...)
	}
	want := []string{geminiAnswer, geminiAnswer, "The command ran.", "The command ran."}
	if got := texts(t, ps); !slices.Equal(got, want) {
		t.Fatalf("agent text %q, want %q", got, want)
	}
	// Each command once, with its end, though its message is written again.
	if got := tools(ps); !slices.Equal(got, geminiTools) {
		t.Fatalf("tool events:\n%q\nwant:\n%q", got, geminiTools)
	}
}

// A call recorded before it ends is reported then, running; its end once
// the message is written again with its result.
func TestGeminiParserToolCallThenItsEnd(t *testing.T) {
	t.Parallel()
	p := NewGeminiParser()
	var ps []chat.Payload
	for _, l := range []string{
		`{"id":"g1","timestamp":"2026-12-06T10:54:37.000Z","type":"gemini","content":"","toolCalls":[{"id":"call-1","name":"read_file","args":{"file_path":"notes.md"},"status":"executing"}]}`,
		`{"id":"g1","timestamp":"2026-12-06T10:54:37.000Z","type":"gemini","content":"","toolCalls":[{"id":"call-1","name":"read_file","args":{"file_path":"notes.md"},"status":"error","result":[{"functionResponse":{"response":{"error":"no such file"}}}]}]}`,
		`{"id":"g1","timestamp":"2026-12-06T10:54:37.000Z","type":"gemini","content":"","toolCalls":[{"id":"call-1","name":"read_file","args":{"file_path":"notes.md"},"status":"error","result":[{"functionResponse":{"response":{"error":"no such file"}}}]}]}`,
	} {
		got, err := p.Line([]byte(l))
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, got...)
	}
	want := []string{"call call-1 read in_progress: notes.md", "end call-1 failed: no such file"}
	if got := tools(ps); !slices.Equal(got, want) {
		t.Fatalf("tool events %q, want %q", got, want)
	}
}

// Prompts are reported when asked (a watched session): the person's, not
// Gemini's context message or a tool's result.
func TestGeminiParserPrompts(t *testing.T) {
	t.Parallel()
	p := NewGeminiParser()
	p.prompts = true
	var prompts []string
	for line := range bytes.Lines(geminiGolden(t)) {
		ps, _ := p.Line(line)
		for _, x := range ps {
			if u, ok := x.(chat.UserMessage); ok {
				prompts = append(prompts, u.Text)
			}
		}
	}
	if want := []string{"hello", "hello", "make the file", "make another"}; !slices.Equal(prompts, want) {
		t.Fatalf("prompts %q, want %q", prompts, want)
	}
}

// A message written again with more words reports only the words added.
func TestGeminiParserGrowingMessage(t *testing.T) {
	t.Parallel()
	p := NewGeminiParser()
	var got []string
	for _, l := range []string{
		`{"id":"a","timestamp":"2026-12-06T20:12:48.873Z","type":"gemini","content":"First"}`,
		`{"id":"a","timestamp":"2026-12-06T20:12:48.873Z","type":"gemini","content":"First part, then more."}`,
		`{"$set":{"messages":[{"id":"a","type":"gemini","content":"First part, then more."},{"id":"b","type":"gemini","content":[{"text":"Next."}]}]}}`,
	} {
		ps, err := p.Line([]byte(l))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, texts(t, ps)...)
	}
	if want := []string{"First", " part, then more.", "Next."}; !slices.Equal(got, want) {
		t.Fatalf("agent text %q, want %q", got, want)
	}
}

// An adopted session's chat is followed from its end: what it held is not
// shown again; what Gemini appends is (prompts and answers, in order), a
// half-written line once it is whole.
func TestFollowGeminiFromItsEnd(t *testing.T) {
	t.Parallel()
	golden := geminiGolden(t)
	// Up to the pane's own answer (its fifth line): the thread has it.
	var head []byte
	n := 0
	for line := range bytes.Lines(golden) {
		if n == 5 {
			break
		}
		head, n = append(head, line...), n+1
	}
	if !bytes.Contains(head, []byte(geminiAnswer)) {
		t.Fatal("the golden file's first answer is not in its first five lines")
	}
	path := filepath.Join(t.TempDir(), "tmp", "work", "chats", "session-x.jsonl")
	os.MkdirAll(filepath.Dir(path), 0o700)
	if err := os.WriteFile(path, head, 0o600); err != nil {
		t.Fatal(err)
	}
	var c collect
	f, err := FollowGemini(path, int64(len(head)), c.add, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Sync()
	if c.len() != 0 {
		t.Fatalf("%d updates from what the chat held, want none", c.len())
	}

	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	rest := golden[len(head):]
	// Gemini's next answer, written in two pieces: nothing of it is read
	// until its line is whole.
	i := bytes.Index(rest, []byte(`"content":"`+geminiAnswer))
	if i < 0 {
		t.Fatal("the golden file has no second answer")
	}
	fh.Write(rest[:i+20])
	f.Sync()
	if c.len() != 1 { // the prompt before it
		t.Fatalf("%d updates with a half-written answer, want 1 (the prompt before it)", c.len())
	}
	fh.Write(rest[i+20:])
	f.Sync()
	testkit.Eventually(t, 5*time.Second, func() bool { return c.len() == 10 }, "the three prompts and answers after the first, and the two commands with their ends")
	c.mu.Lock()
	var prompts []string
	answers := slices.DeleteFunc(slices.Clone(c.ps), func(p chat.Payload) bool {
		u, ok := p.(chat.UserMessage)
		if ok {
			prompts = append(prompts, u.Text)
		}
		return ok
	})
	c.mu.Unlock()
	if want := []string{"hello", "make the file", "make another"}; !slices.Equal(prompts, want) {
		t.Fatalf("prompts %q, want %q", prompts, want)
	}
	if got, want := texts(t, answers), []string{geminiAnswer, "The command ran.", "The command ran."}; !slices.Equal(got, want) {
		t.Fatalf("agent text %q, want %q", got, want)
	}
	if got := tools(answers); !slices.Equal(got, geminiTools) {
		t.Fatalf("tool events:\n%q\nwant:\n%q", got, geminiTools)
	}
}

// A record over MaxRecord is skipped with a warning, not held in memory,
// and the lines after it are read.
func TestFollowSkipsAHugeRecord(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "session-x.jsonl")
	huge := `{"id":"big","type":"gemini","content":"` + strings.Repeat("x", MaxRecord+readChunk) + `"}` + "\n"
	after := `{"id":"small","type":"gemini","content":"After it."}` + "\n"
	if err := os.WriteFile(path, []byte(huge+after), 0o600); err != nil {
		t.Fatal(err)
	}
	var c collect
	f, err := FollowGemini(path, 0, c.add, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c.mu.Lock()
	got := texts(t, c.ps)
	c.mu.Unlock()
	if want := []string{"After it."}; !slices.Equal(got, want) {
		t.Fatalf("agent text %.80q, want %q", got, want)
	}
}

// The chat parser takes any line without panicking, and reports agent text
// only with its message's id.
func FuzzGeminiLine(f *testing.F) {
	for line := range bytes.Lines(geminiGolden(f)) {
		f.Add(line)
	}
	f.Add([]byte(`{"$set":{"messages":null}}`))
	f.Add([]byte(`{"id":"a","type":"gemini","content":[{"text":1}],"thoughts":[{"subject":"s"}]}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		p := NewGeminiParser()
		p.prompts = true
		for i := range 2 {
			ps, _ := p.Line(line)
			if i == 1 && len(ps) > 0 {
				t.Fatalf("the same line again reported %#v", ps)
			}
			for _, x := range ps {
				switch v := x.(type) {
				case chat.AgentChunk:
					if v.MessageID == "" || v.Text == "" {
						t.Fatalf("agent text %#v", v)
					}
				case chat.UserMessage:
					if v.MessageID == "" || v.Text == "" {
						t.Fatalf("prompt %#v", v)
					}
				case chat.ToolCall:
					if v.ToolCallID == "" {
						t.Fatalf("a tool call without its id %#v", v)
					}
				case chat.ToolCallUpdate:
					if v.ToolCallID == "" {
						t.Fatalf("a tool call's end without its id %#v", v)
					}
				case chat.ThoughtChunk:
				default:
					t.Fatalf("update %#v", x)
				}
			}
		}
	})
}
