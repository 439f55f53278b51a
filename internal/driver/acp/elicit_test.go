package acp

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/parleyhq/parley/internal/chat"
)

func form(t *testing.T, msg, schema string) *sdk.UnstableCreateElicitationForm {
	t.Helper()
	var s sdk.UnstableElicitationSchema
	if err := json.Unmarshal([]byte(schema), &s); err != nil {
		t.Fatal(err)
	}
	return &sdk.UnstableCreateElicitationForm{Mode: "form", Message: msg, RequestedSchema: s}
}

// claudeAsk is the form @agentclientprotocol/claude-agent-acp 0.101.0 sent
// for one AskUserQuestion question, recorded against the real adapter.
const claudeAsk = `{"type":"object","properties":{"question_0":{"type":"string","title":"Colour","oneOf":[{"const":"Blue","title":"Blue","description":"the sky"},{"const":"Red","title":"Red","description":"a rose"}]},"question_0_custom":{"type":"string","title":"Other","description":"Type your own answer, or add a note to the option you chose above (optional)."}}}`

func TestFormQuestion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		msg     string
		schema  string
		answers chat.Answers
		want    map[string]any
		wantQ   []chat.QuestionItem
		wantErr bool // the form cannot be shown
		badAns  bool // the answers do not fit
	}{
		{
			name:    "single choice",
			msg:     "Which color do you prefer?",
			schema:  `{"type":"object","properties":{"color":{"type":"string","title":"Color","enum":["red","blue"]}},"required":["color"]}`,
			answers: chat.Answers{"Which color do you prefer?": {Text: "blue"}},
			want:    map[string]any{"color": "blue"},
			wantQ:   []chat.QuestionItem{{Question: "Which color do you prefer?", Header: "Color", Options: []chat.QuestionOption{{Label: "red"}, {Label: "blue"}}}},
		},
		{
			name:    "oneOf with titles",
			msg:     "Pick",
			schema:  `{"type":"object","properties":{"size":{"type":"string","oneOf":[{"const":"s","title":"Small"},{"const":"l","title":"Large"}]}}}`,
			answers: chat.Answers{"Pick": {Text: "Large"}},
			want:    map[string]any{"size": "l"},
			wantQ:   []chat.QuestionItem{{Question: "Pick", Options: []chat.QuestionOption{{Label: "Small", Description: "s"}, {Label: "Large", Description: "l"}}}},
		},
		{
			name:    "multi select and text",
			msg:     "Setup",
			schema:  `{"type":"object","properties":{"langs":{"type":"array","title":"Languages","items":{"enum":["go","rust"]}},"name":{"type":"string","title":"Name"}}}`,
			answers: chat.Answers{"Languages": {Labels: []string{"go", "rust"}}, "Name": {Text: "parley"}},
			want:    map[string]any{"langs": []string{"go", "rust"}, "name": "parley"},
			wantQ: []chat.QuestionItem{
				{Question: "Languages", MultiSelect: true, Options: []chat.QuestionOption{{Label: "go"}, {Label: "rust"}}},
				{Question: "Name", Options: []chat.QuestionOption{}},
			},
		},
		{
			name:    "boolean and number",
			msg:     "More",
			schema:  `{"type":"object","properties":{"ok":{"type":"boolean","title":"Proceed"},"n":{"type":"integer","title":"How many"}}}`,
			answers: chat.Answers{"Proceed": {Text: "Yes"}, "How many": {Text: "3"}},
			want:    map[string]any{"ok": true, "n": 3.0},
			wantQ: []chat.QuestionItem{
				{Question: "How many", Options: []chat.QuestionOption{}},
				{Question: "Proceed", Options: []chat.QuestionOption{{Label: "Yes", Description: "true"}, {Label: "No", Description: "false"}}},
			},
		},
		{
			// Claude's ACP adapter (0.101.0) sends AskUserQuestion so: a choice
			// field and its "Other" box. One question; a label picks, own words
			// go to the box.
			name:    "choice with its own-words companion, a label",
			msg:     "Which colour?",
			schema:  claudeAsk,
			answers: chat.Answers{"Which colour?": {Text: "Blue"}},
			want:    map[string]any{"question_0": "Blue"},
			wantQ: []chat.QuestionItem{{Question: "Which colour?", Header: "Colour",
				Options: []chat.QuestionOption{{Label: "Blue", Description: "the sky"}, {Label: "Red", Description: "a rose"}}}},
		},
		{
			name:    "choice with its own-words companion, own words",
			msg:     "Which colour?",
			schema:  claudeAsk,
			answers: chat.Answers{"Which colour?": {Text: "Teal, please"}},
			want:    map[string]any{"question_0_custom": "Teal, please"},
			wantQ: []chat.QuestionItem{{Question: "Which colour?", Header: "Colour",
				Options: []chat.QuestionOption{{Label: "Blue", Description: "the sky"}, {Label: "Red", Description: "a rose"}}}},
		},
		{
			name:    "required field missing",
			msg:     "Need it",
			schema:  `{"type":"object","properties":{"a":{"type":"string","title":"A"},"b":{"type":"string","title":"B"}},"required":["b"]}`,
			answers: chat.Answers{"A": {Text: "x"}},
			badAns:  true,
		},
		{
			name:    "not a number",
			msg:     "N",
			schema:  `{"type":"object","properties":{"n":{"type":"number"}}}`,
			answers: chat.Answers{"N": {Text: "lots"}},
			badAns:  true,
		},
		{
			name:    "choice by value",
			msg:     "Pick",
			schema:  `{"type":"object","properties":{"size":{"type":"string","oneOf":[{"const":"s","title":"Small"},{"const":"l","title":"Large"}]}}}`,
			answers: chat.Answers{"Pick": {Text: "s"}},
			want:    map[string]any{"size": "s"},
		},
		{
			name:    "choice not offered",
			msg:     "Which color do you prefer?",
			schema:  `{"type":"object","properties":{"color":{"type":"string","enum":["red","blue"]}}}`,
			answers: chat.Answers{"Which color do you prefer?": {Text: "green"}},
			badAns:  true,
		},
		{
			name:    "one of several not offered",
			msg:     "Setup",
			schema:  `{"type":"object","properties":{"langs":{"type":"array","title":"Languages","items":{"enum":["go","rust"]}}}}`,
			answers: chat.Answers{"Setup": {Labels: []string{"go", "cobol"}}},
			badAns:  true,
		},
		{
			name:    "boolean neither yes nor no",
			msg:     "Proceed?",
			schema:  `{"type":"object","properties":{"ok":{"type":"boolean"}}}`,
			answers: chat.Answers{"Proceed?": {Text: "maybe"}},
			badAns:  true,
		},
		{
			name:    "boolean no",
			msg:     "Proceed?",
			schema:  `{"type":"object","properties":{"ok":{"type":"boolean"}}}`,
			answers: chat.Answers{"Proceed?": {Text: "No"}},
			want:    map[string]any{"ok": false},
		},
		{name: "object field", msg: "x", schema: `{"type":"object","properties":{"o":{"type":"object"}}}`, wantErr: true},
		{name: "no fields", msg: "x", schema: `{"type":"object","properties":{}}`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, fields, err := formQuestion("q-1", form(t, tt.msg, tt.schema))
			if tt.wantErr {
				if err == nil {
					t.Fatalf("formQuestion: got %+v want an error", q)
				}
				return
			}
			if err != nil {
				t.Fatalf("formQuestion: %v", err)
			}
			if tt.wantQ != nil && !reflect.DeepEqual(q.Questions, tt.wantQ) {
				t.Errorf("questions:\ngot  %+v\nwant %+v", q.Questions, tt.wantQ)
			}
			got, err := formAnswer(fields, tt.answers)
			if tt.badAns {
				if !errors.Is(err, chat.ErrBadInput) {
					t.Fatalf("formAnswer: got %v, %v want ErrBadInput", got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("formAnswer: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("content: got %#v want %#v", got, tt.want)
			}
		})
	}
}
