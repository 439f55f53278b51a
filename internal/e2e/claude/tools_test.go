//go:build e2e

package claude_test

import (
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

// toolScenario has the model call parley's own tools, as Claude Code names
// them (mcp__<server>__<tool>).
func toolScenario() claudeapi.Scenario {
	return claudeapi.Scenario{Rules: []claudeapi.Rule{
		{Match: claudeapi.Match{Exact: "ask the person"}, Reply: claudeapi.ToolUse("mcp__parley__ask_person",
			map[string]any{"question": "Which colour?", "options": []string{"Red", "Blue"}})},
		{Match: claudeapi.Match{ToolResult: "mcp__parley__ask_person"}, Reply: claudeapi.Text("Thanks for the answer.", 1, 0)},
		{Match: claudeapi.Match{Exact: "tell the person"}, Reply: claudeapi.ToolUse("mcp__parley__notify_person",
			map[string]any{"text": "The build is green.", "level": "done"})},
		{Match: claudeapi.Match{ToolResult: "mcp__parley__notify_person"}, Reply: claudeapi.Text("Told them.", 1, 0)},
	}}
}

// The agent's ask_person becomes a question card in its thread, with no
// permission card before it (parley's tools are allowed), and the answer
// given on the socket is the tool's result the model gets next.
func TestAskPersonAnswerIsTheToolResult(t *testing.T) {
	r := newRig(t, toolScenario(), nil)
	s := r.dial("ask", -1)
	s.Send(chatsock.Msg("m1", "ask the person"))
	i := s.WaitFor(0, wait, chatsock.Type(chat.TypeQuestion), "question card")
	var q chat.Question
	s.Get(i).Decode(&q)
	if len(q.Questions) != 1 || q.Questions[0].Question != "Which colour?" || len(q.Questions[0].Options) != 2 || q.Questions[0].MultiSelect {
		t.Fatalf("card %s", s.Get(i).Raw)
	}
	s.Send(map[string]any{"type": "question_answer", "request_id": q.RequestID, "answers": map[string]any{"Which colour?": "Blue"}})
	s.WaitFor(i, wait, chatsock.Type(chat.TypeQuestionResolved), "resolved")
	s.WaitFor(i, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "done")
	res, ok := r.api.ToolResultFor("mcp__parley__ask_person")
	if !ok || res.IsError || strings.TrimSpace(res.ResultText()) != "Blue" {
		t.Fatalf("model got %q (found %v, error %v), want the answer Blue", res.ResultText(), ok, res.IsError)
	}
	for _, e := range s.Snapshot() {
		if e.Type == chat.TypePermissionRequest {
			t.Fatalf("parley's own tool asked permission: %s", e.Raw)
		}
	}
}

// A stop while the card is open closes it, and the agent's call ends: the
// turn ends stopped and no answer can be given any more.
func TestAskPersonStopClosesTheCard(t *testing.T) {
	r := newRig(t, toolScenario(), nil)
	s := r.dial("ask-stop", -1)
	s.Send(chatsock.Msg("m1", "ask the person"))
	i := s.WaitFor(0, wait, chatsock.Type(chat.TypeQuestion), "question card")
	var q chat.Question
	s.Get(i).Decode(&q)
	s.Send(map[string]any{"type": "stop"})
	j := s.WaitFor(i, wait, chatsock.Type(chat.TypeQuestionResolved), "resolved")
	var res chat.QuestionResolved
	s.Get(j).Decode(&res)
	if !res.Cancelled || res.RequestID != q.RequestID {
		t.Fatalf("resolution %s, want the card cancelled", s.Get(j).Raw)
	}
	s.WaitFor(j, wait, chatsock.Type(chat.TypePromptDone), "the turn's end")
}

// notify_person stores a notice in the thread's log, shows it on the
// socket, and returns at once.
func TestNotifyPersonStoresANotice(t *testing.T) {
	r := newRig(t, toolScenario(), nil)
	s := r.dial("notify", -1)
	s.Send(chatsock.Msg("m1", "tell the person"))
	i := s.WaitFor(0, wait, chatsock.Type(chat.TypeNotice), "notice")
	var n chat.Notice
	s.Get(i).Decode(&n)
	if n != (chat.Notice{Text: "The build is green.", Level: chat.NoticeDone, From: chat.FromAgent}) {
		t.Fatalf("notice %s", s.Get(i).Raw)
	}
	s.WaitFor(i, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "done")
	res, ok := r.api.ToolResultFor("mcp__parley__notify_person")
	if !ok || res.IsError {
		t.Fatalf("model got %q (found %v, error %v)", res.ResultText(), ok, res.IsError)
	}
	// Stored: a new connection's replay, read from the store, holds it.
	s2 := r.dial("notify", 0)
	if j := s2.WaitFor(0, wait, chatsock.Type(chat.TypeNotice), "notice in the replay"); s2.Get(j).Seq != s.Get(i).Seq {
		t.Fatalf("replayed notice %s, live %s", s2.Get(j).Raw, s.Get(i).Raw)
	}
}
