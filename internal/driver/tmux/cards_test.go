package tmux

import (
	"testing"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver/tmux/hook"
	"github.com/parleyhq/parley/internal/driver/tmux/pane"
)

func TestPageQuestion(t *testing.T) {
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

func TestOptionKind(t *testing.T) {
	tests := []struct{ label, want string }{
		{"Yes", chat.OptionAllowOnce},
		{"Yes, and always allow access to cwd/ from this project", chat.OptionAllowAlways},
		{"Yes, and don't ask again for touch commands in /x", chat.OptionAllowAlways},
		{"No", chat.OptionRejectOnce},
		{"No, and tell Claude what to do differently", chat.OptionRejectOnce},
	}
	for _, tt := range tests {
		if got := optionKind(tt.label); got != tt.want {
			t.Errorf("optionKind(%q): got %q, want %q", tt.label, got, tt.want)
		}
	}
}

func TestSessionName(t *testing.T) {
	tests := []struct {
		id   chat.ThreadID
		want string
	}{
		{"t1", "parley-t1"},
		{"th_01J:abc.def", "parley-th_01J-abc-def"},
		{"../../etc;rm -rf", "parley-etc-rm--rf"},
	}
	for _, tt := range tests {
		if got := SessionName(tt.id); got != tt.want {
			t.Errorf("SessionName(%q): got %q, want %q", tt.id, got, tt.want)
		}
	}
	if got := SessionName("x-very-long-thread-identifier-that-goes-on-and-on-forever-and-on"); len(got) > 64 {
		t.Errorf("long id: %q is %d bytes, want ≤ 64", got, len(got))
	}
}

// A turn whose prompt was submitted before a send began is not the send's,
// even when its prompt holds the send's text: the person stopped "yes, do it
// the other way" and then sent "yes"; the first turn's end, arriving while
// "yes" waits to be typed, must not end the "yes" turn. The turn of a prompt
// submitted after the send began, holding its text, is the send's.
func TestOwnsTurnOnlyForAPromptAfterTheSendBegan(t *testing.T) {
	s := &session{promptSeen: make(chan struct{})}
	s.hookEvent(hook.Event{Name: "UserPromptSubmit", Prompt: "yes, do it the other way"})
	s.beginSend("yes")
	s.mu.Lock()
	owns := s.ownsTurn()
	s.mu.Unlock()
	if owns {
		t.Fatal("a turn submitted before the send began counts as the send's")
	}
	s.hookEvent(hook.Event{Name: "UserPromptSubmit", Prompt: "yes"})
	s.mu.Lock()
	owns = s.ownsTurn()
	s.mu.Unlock()
	if !owns {
		t.Fatal("the send's own turn is not the send's")
	}
	s.beginSend("")
	s.mu.Lock()
	owns = s.ownsTurn()
	s.mu.Unlock()
	if !owns {
		t.Fatal("with no send in flight, a turn is not the lane's")
	}
}
