//go:build e2e

package claude_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

var updateFrames = flag.Bool("update", false, "record ui/testdata/frames/*.jsonl again from the real Claude Code")

// Prompts of the recorded session (ui/src/fold.test.ts and internal/tui read
// what they produced).
const (
	framesWrite = "write the notes"
	framesEdit  = "edit the greeting"
	framesBash  = "print one"
	framesAsk   = "ask me"
	framesSlow  = "count slowly"
)

// TestRecordFrames records what a dashboard receives from one real Claude
// Code session: a Write and an Edit asking permission (with Claude Code's
// permission suggestions), "Allow always" switching the mode, a Bash command,
// an AskUserQuestion card, a message sent while an answer streams. The dashboard's fold and the
// TUI's are tested against these frames. Run with -update after a change to
// the protocol or to Claude Code; otherwise it is skipped.
func TestRecordFrames(t *testing.T) {
	if !*updateFrames {
		t.Skip("recording only with -update")
	}
	var sc claudeapi.Scenario
	r := newRig(t, sc, nil)
	greeting := filepath.Join(r.work, "greeting.go")
	if err := os.WriteFile(greeting, []byte("package main\n\nfunc greet() string {\n\treturn \"hello\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sc = claudeapi.Scenario{Name: "frames", Rules: []claudeapi.Rule{
		{Match: claudeapi.Match{Exact: framesWrite}, Reply: claudeapi.ToolUse("Write", map[string]any{
			"file_path": filepath.Join(r.work, "notes.md"), "content": "# Notes\n\n- first\n- second\n"})},
		{Match: claudeapi.Match{ToolResult: "Write"}, Reply: claudeapi.Text("Written.", 1, 0)},
		// Claude Code edits only a file it has read.
		{Match: claudeapi.Match{Exact: framesEdit}, Reply: claudeapi.ToolUse("Read", map[string]any{"file_path": greeting})},
		{Match: claudeapi.Match{ToolResult: "Read"}, Reply: claudeapi.ToolUse("Edit", map[string]any{
			"file_path": greeting, "old_string": "\treturn \"hello\"", "new_string": "\treturn \"hello, world\""})},
		{Match: claudeapi.Match{ToolResult: "Edit"}, Reply: claudeapi.Text("Edited.", 1, 0)},
		{Match: claudeapi.Match{Exact: framesBash}, Reply: claudeapi.Bash("python3 -c 'print(1)'", "Print one")},
		{Match: claudeapi.Match{ToolResult: "Bash"}, Reply: claudeapi.Text("Made.", 1, 0)},
		{Match: claudeapi.Match{Exact: framesAsk}, Reply: claudeapi.ToolUse("AskUserQuestion", map[string]any{
			"questions": []map[string]any{{"question": "Which greeting?", "header": "Greeting", "multiSelect": false,
				"options": []map[string]string{{"label": "hello", "description": "short"}, {"label": "good day", "description": "formal"}}}},
		})},
		{Match: claudeapi.Match{ToolResult: "AskUserQuestion"}, Reply: claudeapi.Text("Thanks.", 1, 0)},
		{Match: claudeapi.Match{Exact: framesSlow}, Reply: claudeapi.Text("one two three four five six seven eight", 8, 100*time.Millisecond)},
	}, Default: &claudeapi.Reply{Blocks: []claudeapi.Block{{Type: claudeapi.BlockText, Text: "Noted."}}}}
	r.api.SetScenario(sc)

	s := chatsock.Dial(t, "http://"+r.d.Addr(), r.d.Token(), client.Options{Chat: "frames", Since: -1})
	s.WaitFor(0, wait, chatsock.Type(chat.TypeReplayDone), "replay_done")
	turn := func(id, text string, answer func(at int)) {
		t.Helper()
		from := s.Len()
		s.Send(chatsock.Msg(id, text))
		if answer != nil {
			answer(from)
		}
		s.WaitFor(from, wait, chatsock.PromptDone(id, chat.StopEndTurn), text+": the answer")
	}
	allow := func(option string) func(int) {
		return func(from int) {
			i := s.WaitFor(from, wait, chatsock.Type(chat.TypePermissionRequest), "the permission card")
			var p chat.PermissionRequest
			_ = s.Get(i).Decode(&p)
			s.Send(map[string]string{"type": "permission_response", "request_id": p.RequestID, "option_id": option})
		}
	}
	turn("m_write", framesWrite, allow(chat.OptionAllowOnce))
	turn("m_edit", framesEdit, allow(chat.OptionAllowAlways))
	turn("m_bash", framesBash, allow(chat.OptionAllowOnce))
	turn("m_ask", framesAsk, func(from int) {
		i := s.WaitFor(from, wait, chatsock.Type(chat.TypeQuestion), "the question card")
		var q chat.Question
		_ = s.Get(i).Decode(&q)
		s.Send(map[string]any{"type": "question_answer", "request_id": q.RequestID, "answers": map[string]string{"Which greeting?": "good day"}})
	})
	// A message sent while an answer streams waits behind it.
	from := s.Len()
	s.Send(chatsock.Msg("m_slow", framesSlow))
	s.WaitFor(from, wait, chatsock.Type(chat.TypeAgentChunk), "the slow answer begins")
	s.Send(chatsock.Msg("m_next", "and then"))
	s.WaitFor(from, wait, chatsock.PromptDone("m_slow", chat.StopEndTurn), "the slow answer")
	s.WaitFor(from, wait, chatsock.PromptDone("m_next", chat.StopEndTurn), "the queued message's answer")
	var buf bytes.Buffer
	for _, ev := range s.Snapshot() {
		var line bytes.Buffer
		if err := json.Compact(&line, ev.Raw); err != nil {
			t.Fatal(err)
		}
		buf.Write(line.Bytes())
		buf.WriteByte('\n')
	}
	dir := filepath.Join(testkit.RepoRoot(t), "ui", "testdata", "frames")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "claude-stream.jsonl"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
