//go:build e2e

package claude_test

import (
	"testing"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
)

// A watched terminal's turn had while parley was stopped reaches the thread
// when parley starts again: the person's prompt and the agent's answer,
// once each, in order, before what the terminal does live from then on.
func TestWatchedTerminalShowsTheTurnHadWhileParleyWasStopped(t *testing.T) {
	testkit.NeedsTmux(t)
	r := newRig(t, adoptScenario(), nil)
	tm, id := r.tuiInTmux(t, "remember the word teapot", "Remembered teapot.")
	s := r.dial("phone", -1)
	at := s.Len()
	s.Send(map[string]any{"type": "resume_session", "agent": "claude", "session_id": id, "cwd": r.work, "watch": true})
	s.WaitFor(at, wait, chatsock.Field(chat.TypeSessionInfo, "state", "resumed"), "the transcript followed")
	at = s.Len()
	tm.TypeLine("and the colour green")
	s.WaitFor(at, wait, agentSaid("Green noted."), "a turn in the terminal, followed live")

	// Parley stopped: the person goes on in the terminal.
	r.stop()
	tm.TypeLine("and the number nine")
	r.waitTranscript(t, "Nine noted.")
	r.start()
	s = r.dial("phone", -1)
	testkit.Eventually(t, wait, func() bool { return resumedCount(s.Snapshot()) == 2 }, "watched again after the restart")
	at = s.Len()
	tm.TypeLine("what was the word?")
	s.WaitFor(at, wait, agentSaid("teapot"), "a live turn after the restart")

	evs := s.Snapshot()
	once := func(what string, match func(client.Event) bool) int { t.Helper(); return onceIn(t, evs, what, match) }
	order := []int{
		once("the live prompt before the stop", personSaid("and the colour green")),
		once("the live answer before the stop", agentSaid("Green noted.")),
		once("the prompt typed while parley was stopped", personSaid("and the number nine")),
		once("the answer given while parley was stopped", agentSaid("Nine noted.")),
		once("the live prompt after the restart", personSaid("what was the word?")),
		once("the live answer after the restart", agentSaid("teapot")),
	}
	for i := 1; i < len(order); i++ {
		if order[i] < order[i-1] {
			t.Fatalf("the thread's turns out of order: events at %v", order)
		}
	}
	var um chat.UserMessage
	if err := evs[order[2]].Decode(&um); err != nil || um.From.Channel != chat.ElsewhereTerminal {
		t.Fatalf("the prompt typed while parley was stopped: %s (%v)", evs[order[2]].Raw, err)
	}
}

// The same for an adopted pane: the turn the person had in it while parley
// was stopped is shown once, before the next message parley types there.
func TestAdoptedPaneShowsTheTurnHadWhileParleyWasStopped(t *testing.T) {
	testkit.NeedsTmux(t)
	r := newRig(t, adoptScenario(), nil)
	tm, id := r.tuiInTmux(t, "remember the word teapot", "Remembered teapot.")
	s := r.dial("phone", -1)
	at := continueSession(t, s, id, r.work)
	s.WaitFor(at, wait, chatsock.Field(chat.TypeSessionInfo, "state", "resumed"), "the pane followed")

	r.stop()
	tm.TypeLine("and the number nine")
	r.waitTranscript(t, "Nine noted.")
	r.start()
	s = r.dial("phone", -1)
	testkit.Eventually(t, wait, func() bool { return resumedCount(s.Snapshot()) == 2 }, "the pane followed again after the restart")
	at = s.Len()
	s.Send(chatsock.Msg("m1", "what was the word?"))
	s.WaitFor(at, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "the turn parley typed in the pane")

	evs := s.Snapshot()
	once := func(what string, match func(client.Event) bool) int { t.Helper(); return onceIn(t, evs, what, match) }
	order := []int{
		once("the prompt typed while parley was stopped", personSaid("and the number nine")),
		once("the answer given while parley was stopped", agentSaid("Nine noted.")),
		once("parley's message", personSaid("what was the word?")),
		once("its answer", agentSaid("teapot")),
	}
	for i := 1; i < len(order); i++ {
		if order[i] < order[i-1] {
			t.Fatalf("the thread's turns out of order: events at %v", order)
		}
	}
}

// onceIn is where in evs the one event match takes is; there must be one.
func onceIn(t *testing.T, evs []client.Event, what string, match func(client.Event) bool) int {
	t.Helper()
	at, n := -1, 0
	for i, e := range evs {
		if match(e) {
			at, n = i, n+1
		}
	}
	if n != 1 {
		t.Fatalf("the thread shows %s %d times, want once", what, n)
	}
	return at
}

func agentSaid(text string) func(client.Event) bool {
	return func(e client.Event) bool { return e.Type == chat.TypeAgentChunk && chatsock.FieldOf(e, "text") == text }
}

func personSaid(text string) func(client.Event) bool {
	return func(e client.Event) bool {
		return e.Type == chat.TypeUserMessage && chatsock.FieldOf(e, "text") == text
	}
}
