//go:build e2e

package gemini_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
)

// Gemini CLI, given parley's MCP server in session/new, calls ask_person:
// parley allows its own tool without a card, the question becomes a card in
// the thread, and the answer given on the socket is what the model gets.
func TestGeminiAskPerson(t *testing.T) {
	r := newRig(t)
	s := r.dial(t, "ask")
	s.Send(chatsock.Msg("m1", "ask the person"))
	i := s.WaitFor(0, wait, chatsock.Type(chat.TypeQuestion), "question card")
	var q chat.Question
	s.Get(i).Decode(&q)
	if len(q.Questions) != 1 || q.Questions[0].Question != "Which colour?" || len(q.Questions[0].Options) != 2 {
		t.Fatalf("card %s", s.Get(i).Raw)
	}
	s.Send(map[string]any{"type": "question_answer", "request_id": q.RequestID, "answers": map[string]any{"Which colour?": "Blue"}})
	s.WaitFor(i, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "done")
	fr, ok := r.api.FunctionResponse("mcp_parley_ask_person")
	if !ok {
		t.Fatal("the tool's result never reached the model")
	}
	b, _ := json.Marshal(fr)
	if !strings.Contains(string(b), "Blue") {
		t.Fatalf("the model got %s, want the answer Blue", b)
	}
	for _, e := range s.Snapshot() {
		if e.Type == chat.TypePermissionRequest {
			t.Fatalf("parley's own tool asked permission: %s", e.Raw)
		}
	}
}
