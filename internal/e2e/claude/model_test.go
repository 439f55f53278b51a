//go:build e2e

package claude_test

import (
	"testing"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
)

// The model and its context window a thread shows stay what the agent ran
// before parley restarted (issue 28, item 5): Claude Code resumed without
// --model takes its transcript's model id, which drops the 1M-context suffix,
// so "Opus / 1000k" came back as "Opus 4.8 / 200k". Both the default model
// and one the person chose are kept.
func TestModelAndContextKeptAcrossRestart(t *testing.T) {
	for _, c := range []struct{ name, choose, want string }{
		{"default", "", "Opus"},
		{"chosen", "sonnet[1m]", "Sonnet 5 (1M context)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, scenario(), nil)
			s := r.dial("model", -1)
			i := 0
			if c.choose != "" {
				s.Send(chatsock.Msg("m0", "remember"))
				i = s.WaitFor(i, wait, chatsock.PromptDone("m0", chat.StopEndTurn), "a turn before the choice")
				s.Send(map[string]any{"type": "set_config_option", "config_id": chat.ModelOption, "value": c.choose})
				i = s.WaitFor(i, wait, func(e client.Event) bool {
					var m chat.Mode
					return e.Type == chat.TypeMode && e.Decode(&m) == nil && m.Model() == c.choose
				}, "the model chosen")
			}
			s.Send(chatsock.Msg("m1", "hello"))
			s.WaitFor(i, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "the turn before the restart")
			model, window := shown(t, s.Snapshot())
			if model != c.want || window != 1000000 {
				t.Fatalf("before the restart: model %q, context window %d; want %q and 1000000", model, window, c.want)
			}
			r.waitTranscript(t, answer)
			r.stop()
			r.start()
			s2 := r.dial("model", -1)
			s2.Send(chatsock.Msg("m2", "hello"))
			s2.WaitFor(0, wait, chatsock.PromptDone("m2", chat.StopEndTurn), "the turn after the restart")
			if m, w := shown(t, s2.Snapshot()); m != model || w != window {
				t.Errorf("after the restart: model %q, context window %d; want %q and %d as before", m, w, model, window)
			}
		})
	}
}

// shown is the model name and context window a thread's screen shows: the
// newest mode event's model, the newest usage's window.
func shown(t *testing.T, evs []client.Event) (model string, window int64) {
	t.Helper()
	for _, e := range evs {
		switch e.Type {
		case chat.TypeMode:
			var m chat.Mode
			if err := e.Decode(&m); err != nil {
				t.Fatal(err)
			}
			if n := m.ModelName(); n != "" {
				model = n
			}
		case chat.TypeUsage:
			var u chat.Usage
			if err := e.Decode(&u); err != nil {
				t.Fatal(err)
			}
			if u.ContextWindow != 0 {
				window = u.ContextWindow
			}
		}
	}
	return model, window
}
