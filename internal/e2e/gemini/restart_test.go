//go:build e2e

package gemini_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/tmuxterm"
)

// An adopted Gemini CLI pane, followed again after parley restarts: the
// prompt the person typed in it while parley was stopped, and its answer,
// are in the thread once, from the terminal, before the next message parley
// types there and its answer.
func TestAdoptedGeminiPaneShowsTheTurnHadWhileParleyWasStopped(t *testing.T) {
	r := newRig(t)
	tm, found := r.tuiInPane(t)
	id := found.ID
	if !found.Running {
		t.Fatalf("the TUI's session is not listed as running: %+v", found)
	}

	s := r.dial(t, "phone")
	s.Send(map[string]any{"type": "resume_session", "agent": "gemini", "session_id": id, "cwd": r.work})
	at := s.WaitFor(0, wait, chatsock.Field(chat.TypeSessionInfo, "state", "resumed"), "the pane adopted")
	s.Send(chatsock.Msg("m0", "hello"))
	s.WaitFor(at, wait, chatsock.PromptDone("m0", chat.StopEndTurn), "parley's first turn in the pane")

	r.stop()
	prompt(tm, "typed in the pane")
	tm.WaitScreen("the pane's answer while parley is stopped", tmuxterm.Has("Answered in the pane."))
	testkit.Eventually(t, wait, func() bool { return strings.Contains(r.chatText(t, id), "Answered in the pane.") }, "the answer in Gemini's chat")
	r.start()

	s = r.dial(t, "phone")
	testkit.Eventually(t, wait, func() bool {
		n := 0
		for _, e := range s.Snapshot() {
			if chatsock.Field(chat.TypeSessionInfo, "state", "resumed")(e) {
				n++
			}
		}
		return n == 2
	}, "the pane followed again after the restart")
	at = s.Len()
	s.Send(chatsock.Msg("m1", "hello"))
	s.WaitFor(at, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "the turn parley typed in the pane after the restart")

	evs := s.Snapshot()
	once := func(what string, match func(client.Event) bool) int {
		t.Helper()
		i, n := -1, 0
		for j, e := range evs {
			if match(e) {
				if i < 0 {
					i = j
				}
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%s: %d in the thread, want 1\n%s", what, n, chatsock.Summary(evs))
		}
		return i
	}
	typed := once("the prompt typed while parley was stopped", chatsock.Field(chat.TypeUserMessage, "text", "typed in the pane"))
	answered := once("its answer", func(e client.Event) bool {
		return e.Type == chat.TypeAgentChunk && strings.Contains(chatsock.FieldOf(e, "text").(string), "Answered in the pane")
	})
	next := once("parley's message after the restart", func(e client.Event) bool {
		return e.Type == chat.TypeUserMessage && chatsock.FieldOf(e, "message_id") == "m1"
	})
	if !(typed < answered && answered < next) {
		t.Fatalf("the thread's turns out of order: typed %d, answered %d, next %d\n%s", typed, answered, next, chatsock.Summary(evs))
	}
	var um chat.UserMessage
	if err := evs[typed].Decode(&um); err != nil || um.From.Channel != chat.ElsewhereTerminal {
		t.Fatalf("the prompt typed while parley was stopped: %s (%v)", evs[typed].Raw, err)
	}
}

// chatText is the text of session id's chat files (every one with its short
// id: a resume may leave a stub beside the chat).
func (r *rig) chatText(t *testing.T, id string) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(r.home, ".gemini", "tmp", "*", "chats", "session-*-"+id[:8]+".jsonl"))
	var b strings.Builder
	for _, f := range files {
		data, _ := os.ReadFile(f)
		b.Write(data)
	}
	return b.String()
}

// A rejection with words from the socket to an adopted Gemini CLI pane,
// whose "No" takes none: Gemini gets the rejection (the command does not
// run), and the words are the person's next message, typed into the pane
// once the turn is over and answered.
func TestAdoptedGeminiRejectionWithWordsGoesAsTheNextMessage(t *testing.T) {
	r := newRig(t)
	_, found := r.tuiInPane(t)
	s := r.dial(t, "phone")
	s.Send(map[string]any{"type": "resume_session", "agent": "gemini", "session_id": found.ID, "cwd": r.work})
	at := s.WaitFor(0, wait, chatsock.Field(chat.TypeSessionInfo, "state", "resumed"), "the pane adopted")
	s.Send(chatsock.Msg("m1", "make a third"))
	i := s.WaitFor(at, wait, chatsock.Type(chat.TypePermissionRequest), "Gemini's shell confirmation as a card")
	var card chat.PermissionRequest
	if err := s.Get(i).Decode(&card); err != nil {
		t.Fatal(err)
	}
	reject := ""
	for _, o := range card.Options {
		if o.Kind == chat.OptionRejectOnce {
			reject = o.ID
		}
	}
	if reject == "" {
		t.Fatalf("the card has no rejection: %s", s.Get(i).Raw)
	}
	s.Send(map[string]any{"type": "permission_response", "request_id": card.RequestID, "option_id": reject, "message": "call it fourth instead"})
	j := s.WaitFor(i, wait, chatsock.Type(chat.TypePermissionResolved), "the card resolved")
	if got := chatsock.FieldOf(s.Get(j), "option_id"); got != reject {
		t.Fatalf("the card's close: %s", s.Get(j).Raw)
	}
	k := s.WaitFor(j, wait, chatsock.Field(chat.TypeUserMessage, "text", "call it fourth instead"), "the words as the person's message")
	id := chatsock.FieldOf(s.Get(k), "message_id").(string)
	s.WaitFor(k, wait, chatsock.Delivery(id, chat.DeliverySubmitted), "the words submitted in the pane")
	s.WaitFor(k, wait, chatsock.PromptDone(id, chat.StopEndTurn), "their turn's end")
	testkit.Eventually(t, wait, func() bool { return strings.Contains(chatsock.Chunks(s.Snapshot()[k:]), "I will call it fourth.") }, "Gemini's answer to the words")
	if _, err := os.Stat(filepath.Join(r.work, "made-third")); err == nil {
		t.Fatal("the rejected command ran")
	}
	for _, e := range s.Snapshot()[i:] {
		if e.Type == chat.TypeError {
			t.Fatalf("an error: %s", e.Raw)
		}
	}
}
