package tmux

import (
	"testing"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver/tmux/pane"
)

func TestPageQuestion(t *testing.T) {
	t.Parallel()
	long := "Which of these very long options about the deployment target do you prefer for the staging environment?"
	items := []chat.QuestionItem{{Question: "Which color do you prefer?"}, {Question: long}}
	tests := []struct {
		name    string
		shown   string // the question as the pane shows it (a wrapped one: its last line)
		answers chat.Answers
		want    string
		ok      bool
	}{
		{name: "exact", shown: "Which color do you prefer?", answers: chat.Answers{"Which color do you prefer?": {Text: "Blue"}, long: {Text: "A"}}, want: "Blue", ok: true},
		{name: "wrapped", shown: "for the staging environment?", answers: chat.Answers{"Which color do you prefer?": {Text: "Blue"}, long: {Text: "A"}}, want: "A", ok: true},
		{name: "only answer", shown: "Something else?", answers: chat.Answers{"x": {Text: "y"}}, want: "y", ok: true},
		{name: "no answer", shown: "Something else?", answers: chat.Answers{"a": {Text: "1"}, "b": {Text: "2"}}, ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, v, ok := pageQuestion(pane.Menu{Question: tt.shown}, items, tt.answers)
			if ok != tt.ok || (ok && v.Text != tt.want) {
				t.Errorf("got %v %v, want %v %v", v, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestOptionFor(t *testing.T) {
	t.Parallel()
	m := pane.Menu{Options: []pane.Option{{Number: 1, Label: "A very long label that"}, {Number: 2, Label: "Short"}, {Number: 3, Label: "Type something.", Free: true}}}
	item := chat.QuestionItem{Options: []chat.QuestionOption{{Label: "A very long label that wraps on the screen"}, {Label: "Short"}}}
	tests := []struct {
		label string
		want  int
	}{
		{"A very long label that wraps on the screen", 1}, {"Short", 2}, {"short", 2}, {"Type something.", 0}, {"Nope", 0},
	}
	for _, tt := range tests {
		o, ok := optionFor(m, item, tt.label)
		got := 0
		if ok {
			got = o.Number
		}
		if got != tt.want {
			t.Errorf("optionFor(%q): got %d, want %d", tt.label, got, tt.want)
		}
	}
}
