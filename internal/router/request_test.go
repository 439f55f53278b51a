package router

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
)

// Every channel's requests are judged by the router itself, before anything is
// routed: a channel that builds a bad request (REST, ACP, a plugin) is refused
// as the socket's client is, with words that say what is wrong.
func TestSendAndControlValidateEveryChannelsRequests(t *testing.T) {
	t.Parallel()
	// No store and no router goroutine: a refusal must come before either is used.
	r := New(nil, nil, Options{})
	ctx := context.Background()
	from := chat.RouteKey{Channel: "rest", Chat: "api"}
	sends := []struct {
		m    Message
		says string
	}{
		{Message{Text: "hi"}, `"message_id" is missing`},
		{Message{MessageID: strings.Repeat("m", MaxIDLen+1), Text: "hi"}, "longer than 128 bytes"},
		{Message{MessageID: "m\x01", Text: "hi"}, "control character"},
		{Message{MessageID: "m1"}, `needs "text"`},
		{Message{MessageID: "m1", Text: "hi", Intent: &Intent{}}, "intent must be"},
		{Message{MessageID: "m1", Text: "hi", Intent: &Intent{New: &NewIntent{}}}, `needs "cwd"`},
		{Message{MessageID: "m1", Text: "hi", Intent: &Intent{Resume: &ResumeIntent{Agent: "a", Cwd: "/"}}}, `needs "session_id"`},
		{Message{MessageID: "m1", Images: []Image{{MIMEType: "image/png"}}}, `image 0 needs`},
		{Message{MessageID: "m1", Images: []Image{{MIMEType: "image/png", Data: []byte("words")}}}, `image 0 is not a PNG`},
	}
	for _, c := range sends {
		_, _, err := r.Send(ctx, SendRequest{From: from, Message: c.m})
		if !errors.Is(err, chat.ErrBadInput) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("Send(%+v): got %v, want a bad input saying %q", c.m, err, c.says)
		}
	}
	controls := []struct {
		c    Control
		says string
	}{
		{Control{}, "empty control"},
		{Control{Permission: &PermissionAnswer{RequestID: "r"}}, `needs "option_id" or "cancelled"`},
		{Control{Permission: &PermissionAnswer{OptionID: "allow"}}, `"request_id" is missing`},
		{Control{Answer: &QuestionAnswer{RequestID: "r"}}, `needs "answers"`},
		{Control{SetMode: &SetMode{}}, `needs "mode_id"`},
		{Control{SetOption: &SetOption{Value: "x"}}, `needs "config_id"`},
	}
	for _, c := range controls {
		c.c.From = from
		if err := r.Control(ctx, c.c); !errors.Is(err, chat.ErrBadInput) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("Control(%+v): got %v, want a bad input saying %q", c.c, err, c.says)
		}
	}
	if _, err := r.ResumeSession(ctx, from, "claude", "", "/"); !errors.Is(err, chat.ErrBadInput) {
		t.Errorf("ResumeSession without a session id: got %v, want a bad input", err)
	}
	if err := r.OpenThread(ctx, from, ""); !errors.Is(err, chat.ErrBadInput) {
		t.Errorf("OpenThread without an id: got %v, want a bad input", err)
	}
}
