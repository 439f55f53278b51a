package push

import (
	"encoding/json"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/store"
)

// An error push is chosen by what happened, not by whether the error names an
// input: the agent dying mid-turn and a restart name the turn's message in
// ref, and must push; an input's own refusal and a model-call retry (the turn
// goes on) must not.
func TestErrorPushesFollowTheErrorsCode(t *testing.T) {
	t.Parallel()
	ev := func(e chat.Error) chat.Event {
		b, _ := json.Marshal(e)
		return chat.Event{Type: chat.TypeError, Payload: b}
	}
	for _, c := range []struct {
		what string
		e    chat.Error
		push bool
	}{
		{"the agent's process died mid-turn", chat.Error{Code: chat.CodeAgent, Message: "exit 137", Ref: "m1"}, true},
		{"parley restarted during the turn", chat.Error{Code: chat.CodeRestart, Ref: "m1"}, true},
		{"a session's own crash", chat.Error{Code: chat.CodeAgent, Message: "crash"}, true},
		{"a model-call retry", chat.Error{Code: chat.CodeRetrying, Message: "500; retries in 1 s"}, false},
		{"a rate limit", chat.Error{Code: chat.CodeRateLimit, Message: "429"}, false},
		{"a refused input", chat.Error{Code: chat.CodeBusy, Ref: "m2"}, false},
	} {
		kind, body := optionalPush(ev(c.e))
		if got := kind == store.PushError && body != ""; got != c.push {
			t.Errorf("%s: push %v (%q %q), want %v", c.what, got, kind, body, c.push)
		}
	}
}
