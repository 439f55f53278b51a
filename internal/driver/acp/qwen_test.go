package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/parleyhq/parley/internal/chat"
)

// qwenRequest is Qwen Code 0.24.4's request_permission for ask_user_question,
// as recorded against the real agent.
const qwenRequest = `{"sessionId":"s","options":[{"optionId":"proceed_once","name":"Submit","kind":"allow_once"},{"optionId":"cancel","name":"Cancel","kind":"reject_once"}],"toolCall":{"toolCallId":"call_4","status":"pending","title":"Ask user 2 questions","kind":"think","_meta":{"toolName":"ask_user_question","qwenInteractionKind":"user_question","qwenQuestions":[{"header":"Colour","multiSelect":false,"options":[{"description":"the sky","label":"Blue"},{"description":"a rose","label":"Red"}],"question":"Which colour?"},{"header":"Pets","multiSelect":true,"options":[{"label":"Cat","description":""},{"label":"Dog","description":""}],"question":"Which pets?"}]}}}`

// wire is the response as the agent reads it: the SDK's marshalling, then
// the lift of fields to the top of the result.
func wire(t *testing.T, r sdk.RequestPermissionResponse) string {
	t.Helper()
	res, _ := json.Marshal(r)
	line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "result": json.RawMessage(res)})
	var out bytes.Buffer
	if _, err := (liftWriter{w: &out}).Write(append(line, '\n')); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func TestQwenQuestion(t *testing.T) {
	t.Parallel()
	var p sdk.RequestPermissionRequest
	if err := json.Unmarshal([]byte(qwenRequest), &p); err != nil {
		t.Fatal(err)
	}
	q, ok := qwenQuestion(p)
	if !ok || len(q.items) != 2 || q.items[0].Question != "Which colour?" || q.items[0].Options[1].Label != "Red" || !q.items[1].MultiSelect {
		t.Fatalf("question: %+v, %v", q, ok)
	}
	tests := []struct {
		name     string
		answers  chat.Answers
		response string
		want     string
		err      error
	}{
		{name: "labels and a multi-select", answers: chat.Answers{"Which colour?": {Text: "Blue"}, "Which pets?": {Labels: []string{"Cat", "Dog"}}},
			want: `{"id":7,"jsonrpc":"2.0","result":{"answers":{"0":"Blue","1":"Cat, Dog"},"outcome":{"optionId":"proceed_once","outcome":"selected"}}}` + "\n"},
		{name: "own words", answers: chat.Answers{"Which colour?": {Text: "Teal, please"}, "Which pets?": {Text: "none"}},
			want: `{"id":7,"jsonrpc":"2.0","result":{"answers":{"0":"Teal, please","1":"none"},"outcome":{"optionId":"proceed_once","outcome":"selected"}}}` + "\n"},
		{name: "a free response answers the one question left", answers: chat.Answers{"Which colour?": {Text: "Red"}}, response: "a fish",
			want: `{"id":7,"jsonrpc":"2.0","result":{"answers":{"0":"Red","1":"a fish"},"outcome":{"optionId":"proceed_once","outcome":"selected"}}}` + "\n"},
		{name: "nothing answered is the agent's cancel", answers: chat.Answers{},
			want: `{"id":7,"jsonrpc":"2.0","result":{"outcome":{"optionId":"cancel","outcome":"selected"}}}` + "\n"},
		{name: "a question not on the card", answers: chat.Answers{"Which car?": {Text: "Red"}}, err: chat.ErrBadInput},
		{name: "a free response with two open questions", response: "both", err: chat.ErrBadInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := q.answer(tt.answers, tt.response)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("error %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := wire(t, r); got != tt.want {
				t.Fatalf("on the wire:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// A permission request without Qwen's marker stays a permission card, and a
// line without the lift marker passes byte for byte.
func TestQwenQuestionOnlyWhenMarked(t *testing.T) {
	t.Parallel()
	var p sdk.RequestPermissionRequest
	_ = json.Unmarshal([]byte(qwenRequest), &p)
	delete(p.ToolCall.Meta, "qwenInteractionKind")
	if _, ok := qwenQuestion(p); ok {
		t.Fatal("an unmarked permission request was taken for a question")
	}
	line := `{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"prompt":[{"type":"text","text":"say \"parley.lift\""}]}}` + "\n"
	var out bytes.Buffer
	if _, err := (liftWriter{w: &out}).Write([]byte(line)); err != nil || out.String() != line {
		t.Fatalf("a person's text naming the marker was changed: %q, %v", out.String(), err)
	}
}

// Qwen Code reports tokens per model call in an empty message chunk's
// _meta.usage and none on the prompt's answer: the turn's usage is their sum.
func TestUsageSummedFromChunkMeta(t *testing.T) {
	t.Parallel()
	m := newMapper()
	var u sdk.SessionUpdate
	for _, line := range []string{
		`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":""},"_meta":{"usage":{"inputTokens":10,"outputTokens":5,"totalTokens":15},"durationMs":70}}`,
		`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"done"}}`,
		`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":""},"_meta":{"usage":{"inputTokens":30,"outputTokens":7}}}`,
	} {
		if err := json.Unmarshal([]byte(line), &u); err != nil {
			t.Fatal(err)
		}
		m.update(u)
	}
	if got, ok := m.takeUsage(); !ok || got != (chat.Usage{InputTokens: 40, OutputTokens: 12}) {
		t.Fatalf("summed usage %+v, %v; want 40 in, 12 out", got, ok)
	}
	if _, ok := m.takeUsage(); ok {
		t.Fatal("the next turn starts with usage left over")
	}
}

// Answering a question allows it once: offered "always" first, the answer
// still picks the agent's allow_once option.
func TestQwenQuestionAnswerAllowsOnce(t *testing.T) {
	t.Parallel()
	req := strings.Replace(qwenRequest, `"options":[{"optionId":"proceed_once"`,
		`"options":[{"optionId":"proceed_always","name":"Always","kind":"allow_always"},{"optionId":"proceed_once"`, 1)
	var p sdk.RequestPermissionRequest
	if err := json.Unmarshal([]byte(req), &p); err != nil {
		t.Fatal(err)
	}
	q, ok := qwenQuestion(p)
	if !ok || q.submit != "proceed_once" {
		t.Fatalf("submit option %q (%v), want proceed_once", q.submit, ok)
	}
}
