//go:build e2e

package agents_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

var updateFrames = flag.Bool("update", false, "record ui/testdata/frames/claude-acp.jsonl again from the real Claude Code through its ACP adapter")

// TestRecordFramesClaudeACP records what a dashboard receives from the real
// Claude Code through its ACP adapter: a plan (TodoWrite, which the adapter
// sends as ACP plans) made in one turn and moved on in the next,
// and an Edit behind a permission card with the adapter's diff. The
// dashboard's fold (ui/src/fold.test.ts) and the TUI's are tested against
// these frames. Run with -update; otherwise it is skipped.
func TestRecordFramesClaudeACP(t *testing.T) {
	if !*updateFrames {
		t.Skip("recording only with -update")
	}
	home, work := dirs(t)
	greeting := filepath.Join(work, "greeting.go")
	if err := os.WriteFile(greeting, []byte("package main\n\nfunc greet() string {\n\treturn \"hello\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The adapter sends a TodoWrite tool use as an ACP plan (Claude Code
	// 2.1.197 itself has Task tools instead and fails the call; the plan is
	// the adapter's, from the model's tool use).
	todos := func(states ...string) claudeapi.Block {
		var list []map[string]string
		for i, st := range states {
			c := []string{"Read the greeting", "Change the greeting"}[i]
			list = append(list, map[string]string{"content": c, "status": st, "activeForm": c + " now"})
		}
		b, _ := json.Marshal(map[string]any{"todos": list})
		return claudeapi.Block{Type: claudeapi.BlockToolUse, Name: "TodoWrite", Input: b}
	}
	api := claudeapi.Start(t, claudeapi.Scenario{Rules: []claudeapi.Rule{
		{Match: claudeapi.Match{Exact: "make a plan"}, Reply: claudeapi.Reply{Blocks: []claudeapi.Block{todos("pending", "pending"), todos("in_progress", "pending")}}},
		{Match: claudeapi.Match{Exact: "go on"}, Reply: claudeapi.Reply{Blocks: []claudeapi.Block{todos("completed", "in_progress")}}},
		{Match: claudeapi.Match{ToolResult: "TodoWrite"}, Reply: claudeapi.Text("On it.", 1, 0)},
		{Match: claudeapi.Match{Exact: "edit the greeting"}, Reply: claudeapi.ToolUse("Read", map[string]any{"file_path": greeting})},
		{Match: claudeapi.Match{ToolResult: "Read"}, Reply: claudeapi.ToolUse("Edit", map[string]any{
			"file_path": greeting, "old_string": "\treturn \"hello\"", "new_string": "\treturn \"hello, world\""})},
		{Match: claudeapi.Match{ToolResult: "Edit"}, Reply: claudeapi.Text("Edited.", 1, 0)},
	}})
	env := map[string]string{"PATH": testkit.Node22PATH(t)}
	for _, kv := range claudeapi.Env(t, api, home, work) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	if os.Geteuid() == 0 {
		env["IS_SANDBOX"] = "1"
	}
	r := start(t, agent{cfg: config.Agent{ID: "claude-acp", Transport: config.TransportACP, Command: testkit.ClaudeACPBin(t), Env: env, Mode: "default"}, home: home}, work)
	s := r.dial("frames")
	turn := func(id, text string, answer func(from int)) {
		t.Helper()
		from := s.Len()
		s.Send(chatsock.Msg(id, text))
		if answer != nil {
			answer(from)
		}
		s.WaitFor(from, wait, chatsock.PromptDone(id, chat.StopEndTurn), text+": the answer")
	}
	turn("m_plan", "make a plan", nil)
	turn("m_on", "go on", nil)
	turn("m_edit", "edit the greeting", func(from int) {
		i := s.WaitFor(from, wait, chatsock.Type(chat.TypePermissionRequest), "the permission card")
		var p chat.PermissionRequest
		_ = s.Get(i).Decode(&p)
		opt := ""
		for _, o := range p.Options {
			if o.Kind == chat.OptionAllowOnce {
				opt = o.ID
			}
		}
		s.Send(map[string]string{"type": "permission_response", "request_id": p.RequestID, "option_id": opt})
	})
	var buf bytes.Buffer
	for _, ev := range s.Snapshot() {
		if err := json.Compact(&buf, ev.Raw); err != nil {
			t.Fatal(err)
		}
		buf.WriteByte('\n')
	}
	if err := os.WriteFile(filepath.Join(testkit.RepoRoot(t), "ui", "testdata", "frames", "claude-acp.jsonl"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
