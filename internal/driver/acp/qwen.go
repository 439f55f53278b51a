package acp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/parleyhq/parley/internal/chat"
)

// Qwen Code (0.24.4) asks its questions (the ask_user_question tool) as a
// session/request_permission whose tool call carries
// _meta.qwenInteractionKind "user_question" and the questions in
// _meta.qwenQuestions (Claude's AskUserQuestion shape: question, header,
// options of label and description, multiSelect). It reads the answers from
// a top-level "answers" field of the response, next to the outcome, keyed by
// the question's index ("0", "1", …) with the answer as text. parley shows it
// as its ordinary question card.

// qwenCard is what answering a Qwen question needs.
type qwenCard struct {
	submit, cancel sdk.PermissionOptionId // the agent's allow and reject options
	items          []chat.QuestionItem
}

// qwenQuestion reads a Qwen question out of a permission request.
func qwenQuestion(p sdk.RequestPermissionRequest) (*qwenCard, bool) {
	meta := p.ToolCall.Meta
	if meta["qwenInteractionKind"] != "user_question" {
		return nil, false
	}
	raw, err := json.Marshal(meta["qwenQuestions"])
	if err != nil {
		return nil, false
	}
	var qs []struct {
		Question    string `json:"question"`
		Header      string `json:"header"`
		MultiSelect bool   `json:"multiSelect"`
		Options     []struct {
			Label       string `json:"label"`
			Description string `json:"description"`
		} `json:"options"`
	}
	if json.Unmarshal(raw, &qs) != nil || len(qs) == 0 {
		return nil, false
	}
	c := &qwenCard{}
	for _, o := range p.Options {
		switch {
		// An answer allows this once: an "always" kind is taken only when
		// the agent offers nothing narrower.
		case o.Kind == sdk.PermissionOptionKindAllowOnce:
			c.submit = o.OptionId
		case c.submit == "" && strings.HasPrefix(string(o.Kind), "allow"):
			c.submit = o.OptionId
		case c.cancel == "" && strings.HasPrefix(string(o.Kind), "reject"):
			c.cancel = o.OptionId
		}
	}
	if c.submit == "" {
		return nil, false
	}
	for _, q := range qs {
		it := chat.QuestionItem{Question: q.Question, Header: q.Header, MultiSelect: q.MultiSelect, Options: []chat.QuestionOption{}}
		for _, o := range q.Options {
			it.Options = append(it.Options, chat.QuestionOption{Label: o.Label, Description: o.Description})
		}
		c.items = append(c.items, it)
	}
	return c, true
}

// cancelled is the answer when the person stops the turn or gives no answer.
func (c *qwenCard) cancelled() sdk.RequestPermissionResponse {
	if c.cancel == "" {
		return cancelledPermission()
	}
	return sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{
		Selected: &sdk.RequestPermissionOutcomeSelected{Outcome: "selected", OptionId: c.cancel}}}
}

// answer builds the response: the submit option, and the answers by index.
// A label is sent as the label, the person's own words as they are; several
// labels of a multi-select question are joined with ", " (as Qwen Code's own
// picker does). A free Response answers the one question left unanswered.
func (c *qwenCard) answer(a chat.Answers, response string) (sdk.RequestPermissionResponse, error) {
	index := map[string]int{}
	for i, it := range c.items {
		index[it.Question] = i
	}
	out := map[string]string{}
	for q, v := range a {
		i, ok := index[q]
		if !ok {
			return sdk.RequestPermissionResponse{}, fmt.Errorf("%w: no question %q on this card", chat.ErrBadInput, q)
		}
		text := strings.Join(v.Words(), ", ") // several labels as one text, as the agent's own picker gives them
		if strings.TrimSpace(text) != "" {
			out[strconv.Itoa(i)] = text
		}
	}
	if response = strings.TrimSpace(response); response != "" {
		var open []int
		for i := range c.items {
			if _, ok := out[strconv.Itoa(i)]; !ok {
				open = append(open, i)
			}
		}
		if len(open) != 1 {
			return sdk.RequestPermissionResponse{}, fmt.Errorf("%w: this agent takes an answer per question: answer each one", chat.ErrBadInput)
		}
		out[strconv.Itoa(open[0])] = response
	}
	if len(out) == 0 {
		return c.cancelled(), nil
	}
	return sdk.RequestPermissionResponse{
		Meta:    map[string]any{liftKey: map[string]any{"answers": out}},
		Outcome: sdk.RequestPermissionOutcome{Selected: &sdk.RequestPermissionOutcomeSelected{Outcome: "selected", OptionId: c.submit}},
	}, nil
}

// liftKey marks, in a response's _meta, fields an agent's dialect reads at
// the top level of the result, where the SDK's typed responses have no room:
// liftWriter moves them there on the way out.
const liftKey = "parley.lift"

// liftWriter rewrites a JSON-RPC response line whose result's _meta holds
// liftKey: its fields go to the top level of the result. Other lines pass
// unchanged. The SDK writes one whole message per Write.
type liftWriter struct{ w io.Writer }

func (l liftWriter) Write(b []byte) (int, error) {
	if !bytes.Contains(b, []byte(`"`+liftKey+`"`)) {
		return l.w.Write(b)
	}
	out, ok := lift(b)
	if !ok {
		return l.w.Write(b)
	}
	if _, err := l.w.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}

func lift(b []byte) ([]byte, bool) {
	var msg map[string]json.RawMessage
	if json.Unmarshal(b, &msg) != nil || msg["result"] == nil {
		return nil, false
	}
	var res map[string]any
	if json.Unmarshal(msg["result"], &res) != nil {
		return nil, false
	}
	meta, _ := res["_meta"].(map[string]any)
	fields, ok := meta[liftKey].(map[string]any)
	if !ok {
		return nil, false
	}
	delete(meta, liftKey)
	if len(meta) == 0 {
		delete(res, "_meta")
	}
	for k, v := range fields {
		res[k] = v
	}
	r, err := json.Marshal(res)
	if err != nil {
		return nil, false
	}
	msg["result"] = r
	out, err := json.Marshal(msg)
	if err != nil {
		return nil, false
	}
	return append(out, '\n'), true
}
