//go:build e2e

package terminal_test

import (
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

// Claude Code in tmux gets parley's MCP server too (--mcp-config from the
// session's folder): its ask_person is a card answered from the socket with
// no permission menu first, and notify_person a notice in the thread.
func TestClaudeInTmuxUsesParleysTools(t *testing.T) {
	td := startTmuxDaemon(t, []claudeapi.Rule{
		{Match: claudeapi.Match{Exact: "ask the person"}, Reply: claudeapi.ToolUse("mcp__parley__ask_person",
			map[string]any{"question": "Which colour?", "options": []string{"Red", "Blue"}})},
		{Match: claudeapi.Match{ToolResult: "mcp__parley__ask_person"}, Reply: claudeapi.ToolUse("mcp__parley__notify_person",
			map[string]any{"text": "Asked and answered.", "level": "done"})},
		{Match: claudeapi.Match{ToolResult: "mcp__parley__notify_person"}, Reply: claudeapi.Text("All done.", 1, 0)},
	})
	s := chatsock.Dial(t, "http://"+td.d.Addr(), td.d.Token(), client.Options{Chat: "tmux-tools", Since: -1})
	s.WaitFor(0, wait, chatsock.Type(chat.TypeReplayDone), "ready")
	s.Send(chatsock.Msg("m1", "ask the person"))
	i := s.WaitFor(0, wait, chatsock.Type(chat.TypeQuestion), "question card")
	var q chat.Question
	s.Get(i).Decode(&q)
	if len(q.Questions) != 1 || q.Questions[0].Question != "Which colour?" {
		t.Fatalf("card %s", s.Get(i).Raw)
	}
	s.Send(map[string]any{"type": "question_answer", "request_id": q.RequestID, "answers": map[string]any{"Which colour?": "Blue"}})
	n := s.WaitFor(i, wait, chatsock.Type(chat.TypeNotice), "notice")
	if !strings.Contains(string(s.Get(n).Raw), "Asked and answered.") {
		t.Fatalf("notice %s", s.Get(n).Raw)
	}
	s.WaitFor(n, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "turn end")
	if res, ok := td.api.ToolResultFor("mcp__parley__ask_person"); !ok || res.IsError || strings.TrimSpace(res.ResultText()) != "Blue" {
		t.Fatalf("the model got %q (found %v)", res.ResultText(), ok)
	}
	for _, e := range s.Snapshot() {
		if e.Type == chat.TypePermissionRequest {
			t.Fatalf("parley's own tool asked permission: %s", e.Raw)
		}
	}
}
