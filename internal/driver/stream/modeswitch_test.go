package stream

import (
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

// TestModeSwitchedBackIsTheModeInForce: a person who switches modes quickly
// (plan, default, acceptEdits, default) is shown default at the end, and
// default is what Claude Code applies: a Bash command asks first. (In plan
// mode, Claude Code 2.1.197 runs the scripted Bash command without asking;
// changes sent back to back could leave it there while parley showed default.)
func TestModeSwitchedBackIsTheModeInForce(t *testing.T) {
	t.Parallel()
	r := newRig(t, claudeapi.Scenario{Rules: []claudeapi.Rule{
		{Match: claudeapi.Match{Exact: "run it"}, Reply: claudeapi.Bash("touch made-by-bash", "Make a file")},
		{Match: claudeapi.Match{ToolResult: "Bash"}, Reply: claudeapi.Text("Done.", 1, 0)},
	}})
	s := r.start()
	r.prompt(s, "hello")
	r.sink.waitTurns(t, 1)
	for _, m := range []string{"plan", "default", "acceptEdits", "default"} {
		if err := s.SetMode(ctxT(t), m); err != nil {
			t.Fatalf("set mode %s: %v", m, err)
		}
	}
	ms := all[chat.Mode](r.sink)
	if got := ms[len(ms)-1].Current; got != "default" {
		t.Errorf("mode shown after the changes: got %q, want default", got)
	}
	r.prompt(s, "run it")
	testkit.Eventually(t, 30*time.Second, func() bool { return len(all[chat.PermissionRequest](r.sink)) > 0 || len(r.sink.turnsEnded()) >= 2 },
		"neither a card nor the turn's end")
	if len(all[chat.PermissionRequest](r.sink)) == 0 {
		t.Errorf("the Bash command ran without asking; mode events: %v", all[chat.Mode](r.sink))
	}
}

// heldModeSink holds the first mode event for hold until release is closed,
// as a reader goroutine descheduled between recording a mode and saying so.
type heldModeSink struct {
	*recSink
	hold     string
	held     chan struct{} // closed when that event has come and is held
	release  chan struct{}
	holdOnce sync.Once
}

func (h *heldModeSink) Event(p chat.Payload) {
	if m, ok := p.(chat.Mode); ok && m.Current == h.hold {
		h.holdOnce.Do(func() {
			close(h.held)
			<-h.release
		})
	}
	h.recSink.Event(p)
}

// TestSetModeReturnsAfterItsModeIsShown: the reader records the mode Claude
// Code's status line reports and sends its event; SetMode waits until that
// mode is in force. Woken before the event was sent, SetMode found the mode
// recorded and returned, and the last mode shown was still the old one (what
// TestModesAndModel saw under load: got "plan" want "bypassPermissions").
// Here that ordering is made every time: SetMode is held after writing its
// request while the reader takes Claude Code's answer and status line, and
// the reader is held in the middle of sending the new mode's event.
func TestSetModeReturnsAfterItsModeIsShown(t *testing.T) {
	t.Parallel()
	sink := &heldModeSink{recSink: &recSink{}, hold: "bypassPermissions", held: make(chan struct{}), release: make(chan struct{})}
	s := newSession(sink, slog.New(slog.DiscardHandler), true)
	defer close(s.gone)
	requests, written := make(chan []byte, 1), make(chan struct{})
	go func() { // stands in for the stdin writer; the write ends when the test says
		req := <-s.writes
		req.claimed.Store(true)
		requests <- req.line
		<-written
		req.done <- nil
	}()
	s.handleLine([]byte(`{"type":"system","subtype":"status","status":null,"permissionMode":"plan"}`))

	returned := make(chan string, 1) // the last mode shown when SetMode returned
	go func() {
		if err := s.SetMode(t.Context(), "bypassPermissions"); err != nil {
			t.Errorf("SetMode: %v", err)
		}
		ms := all[chat.Mode](sink.recSink)
		returned <- ms[len(ms)-1].Current
	}()
	var req struct {
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal(<-requests, &req); err != nil {
		t.Fatal(err)
	}
	s.handleLine([]byte(`{"type":"control_response","response":{"subtype":"success","request_id":"` + req.RequestID + `","response":{"mode":"bypassPermissions"}}}`))
	go s.handleLine([]byte(`{"type":"system","subtype":"status","status":null,"permissionMode":"bypassPermissions"}`))
	<-sink.held
	close(written)
	// SetMode goes on now, with its answer and the status line read. Had it
	// returned (the bug), it would at once; a second is ample to see it.
	select {
	case got := <-returned:
		close(sink.release)
		t.Fatalf("SetMode returned while its mode's event was still held; the last mode shown was %q", got)
	case <-time.After(time.Second):
	}
	close(sink.release)
	if got := <-returned; got != "bypassPermissions" {
		t.Errorf("mode shown when SetMode returned: got %q, want bypassPermissions", got)
	}
}

// Claude Code reports its model by full id ("claude-opus-4-8[1m]") and lists
// aliases ("opus[1m]"): the model shown is the list's entry, so every surface
// names it the one way; family, 1M context and version must all match.
func TestModelIDShownAsItsListEntry(t *testing.T) {
	t.Parallel()
	// Claude Code 2.1.197's list.
	list := []chat.ModeOption{{ID: "default", Name: "Default (recommended)", Description: "Use the default model (currently Opus 4.8 (1M context)) · $5/$25 per Mtok"},
		{ID: "opus[1m]", Name: "Opus", Description: "Opus 4.8 with 1M context · Best for everyday, complex tasks · $5/$25 per Mtok"},
		{ID: "sonnet", Name: "Sonnet", Description: "Sonnet 5 · Efficient for routine tasks · $3/$15 per Mtok"},
		{ID: "sonnet[1m]", Name: "Sonnet 5 (1M context)", Description: "Sonnet 5 for long sessions · $3/$15 per Mtok"},
		{ID: "haiku", Name: "Haiku", Description: "Haiku 4.5 · Fastest for quick answers · $1/$5 per Mtok"}}
	for model, want := range map[string]string{
		"claude-opus-4-8[1m]":       "opus[1m]",
		"claude-opus-4-8":           "claude-opus-4-8", // the list has Opus with 1M context only
		"claude-sonnet-5":           "sonnet",
		"claude-sonnet-5[1m]":       "sonnet[1m]",
		"claude-sonnet-4-5":         "claude-sonnet-4-5", // Sonnet is Sonnet 5 now: not this one
		"claude-haiku-4-5-20251001": "haiku",
		"claude-haiku-4-55":         "claude-haiku-4-55",
		"opus[1m]":                  "opus[1m]",
		"some-other-model":          "some-other-model",
		"":                          "",
	} {
		if got := modelValue(model, list); got != want {
			t.Errorf("modelValue(%q) = %q, want %q", model, got, want)
		}
	}
	md := chat.Mode{ConfigOptions: []chat.ConfigOption{{ID: chat.ModelOption, Current: modelValue("claude-opus-4-8[1m]", list), Values: list}}}
	if md.ModelName() != "Opus" {
		t.Errorf("the name shown for claude-opus-4-8[1m]: %q, want Opus", md.ModelName())
	}
	if got := modelValue("claude-opus-4-8", nil); got != "claude-opus-4-8" {
		t.Errorf("without a list: %q", got)
	}
}
