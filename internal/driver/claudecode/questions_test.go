package claudecode

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
)

// AskUserQuestion's input, as Claude Code sends it to either transport,
// becomes the question card's items.
func TestQuestions(t *testing.T) {
	t.Parallel()
	in := json.RawMessage(`{"questions":[
		{"question":"Which color?","header":"Color","multiSelect":false,"options":[{"label":"Blue","description":"calm"},{"label":"Red"}]},
		{"question":"Which fruits?","header":"Fruit","multiSelect":true,"options":[{"label":"Apple"}]}]}`)
	want := []chat.QuestionItem{
		{Question: "Which color?", Header: "Color", Options: []chat.QuestionOption{{Label: "Blue", Description: "calm"}, {Label: "Red"}}},
		{Question: "Which fruits?", Header: "Fruit", MultiSelect: true, Options: []chat.QuestionOption{{Label: "Apple"}}},
	}
	if got := Questions(in); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for _, bad := range []string{``, `{}`, `[1]`, `{"questions":5}`} {
		if got := Questions(json.RawMessage(bad)); len(got) != 0 {
			t.Errorf("Questions(%q) = %+v, want none", bad, got)
		}
	}
}
