//go:build e2e

package claude_test

import (
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

// The fault issue 11 found, made deterministic: the message is written to
// Claude Code's stdin while the process cannot read it (stopped), and the
// process is then killed. The receipt must stay "delivering" while the line
// sits unread, then say "failed" with the reason; the model never got the
// text, and the next message goes to a resumed session that never heard of it.
func TestMessageUnreadWhenTheAgentDiesIsNotSubmitted(t *testing.T) {
	r := newRig(t, scenario(), nil)
	s := r.dial("unread", -1)
	s.Send(chatsock.Msg("m0", "remember"))
	at := s.WaitFor(0, wait, chatsock.PromptDone("m0", chat.StopEndTurn), "a first, whole turn")
	// The premise is a conversation that holds the first turn.
	r.waitTranscript(t, `"content":"remember"`, `"text":"Noted."`)
	pids := r.agentPIDs()
	if len(pids) != 1 {
		t.Fatalf("agent processes %v, want one", pids)
	}
	pid := pids[0]
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })

	s.Send(chatsock.Msg("m1", "hello"))
	at = s.WaitFor(at, wait, chatsock.Delivery("m1", chat.DeliveryDelivering), "delivering")
	// The line is in the pipe, unread.
	testkit.Eventually(t, wait, func() bool {
		n, err := testkit.UnreadStdin(pid)
		if err != nil {
			t.Fatalf("the agent's stdin: %v", err)
		}
		return n > 0
	}, "the message never reached the agent's stdin pipe")
	// parley's own work is done within milliseconds (the line is written); a
	// "submitted" for an unread line would come now. Give it a second.
	time.Sleep(time.Second)
	for _, ev := range s.Snapshot()[at:] {
		if chatsock.Delivery("m1", chat.DeliverySubmitted)(ev) {
			t.Fatalf("submitted while the agent could not read its stdin:\n%s", chatsock.Summary(s.Snapshot()))
		}
	}

	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	i := s.WaitFor(at, wait, chatsock.Delivery("m1", chat.DeliveryFailed), "failed")
	var d chat.Delivery
	if err := s.Get(i).Decode(&d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.Detail, "exited") {
		t.Errorf("failed detail %q: want the exit as the reason", d.Detail)
	}
	for _, ev := range s.Snapshot() {
		if chatsock.Delivery("m1", chat.DeliverySubmitted)(ev) || chatsock.PromptDone("m1", chat.StopError)(ev) {
			t.Fatalf("a message that never got there has %s:\n%s", ev.Raw, chatsock.Summary(s.Snapshot()))
		}
	}
	s.WaitFor(i, wait, func(e client.Event) bool {
		return e.Type == chat.TypeTurnStatus && chatsock.FieldOf(e, "active") != true
	}, "the turn over")

	// The next message resumes the conversation; the model got "hello" only now.
	s.Send(chatsock.Msg("m2", "hello"))
	s.WaitFor(i, wait, chatsock.PromptDone("m2", chat.StopEndTurn), "the next message")
	reqs := r.api.ScenarioRequests()
	for _, rq := range reqs[:len(reqs)-1] {
		if texts := rq.UserTexts(); len(texts) > 0 && texts[len(texts)-1] == "hello" {
			t.Fatalf("the model got the unread message before the next one: %q", texts)
		}
	}
	// (Claude Code 2.1.197 adds a "Continue from where you left off." of its
	// own to a resumed conversation.)
	texts := reqs[len(reqs)-1].UserTexts()
	hellos := 0
	for _, x := range texts {
		if strings.TrimSpace(x) == "hello" {
			hellos++
		}
	}
	if len(texts) == 0 || strings.TrimSpace(texts[0]) != "remember" || hellos != 1 {
		t.Fatalf("the resumed session's request: user texts %q, want remember first and hello once", texts)
	}
}

// The other side of the same fault: the process dies after Claude Code took
// the message and asked the model, before anything of the answer came back.
// The receipt must match what the conversation kept: "submitted" (and the
// turn ends with the error) when Claude Code's transcript kept the message,
// so a resumed session has it; else "unknown" (never "failed": the model had
// it, and a retry would give it twice), and the resumed session does not
// have it. Claude Code 2.1.197 writes its transcript in batches: killed at
// once, the prompt is usually not kept yet; killed once the transcript has
// it, it must be "submitted".
func TestMessageTheModelGotBeforeTheAgentDiedMatchesTheConversation(t *testing.T) {
	t.Run("killed at once", func(t *testing.T) { modelAskedThenKilled(t, false) })
	t.Run("killed once the transcript has it", func(t *testing.T) { modelAskedThenKilled(t, true) })
}

func modelAskedThenKilled(t *testing.T, afterTranscript bool) {
	sc := scenario()
	sc.Rules = append(sc.Rules, claudeapi.Rule{Match: claudeapi.Match{Exact: "think first"},
		Reply: claudeapi.Reply{Wait: claudeapi.Duration(time.Minute), Blocks: []claudeapi.Block{{Type: claudeapi.BlockText, Text: "Thought."}}}})
	r := newRig(t, sc, nil)
	s := r.dial("asked", -1)
	s.Send(chatsock.Msg("m0", "remember"))
	at := s.WaitFor(0, wait, chatsock.PromptDone("m0", chat.StopEndTurn), "a first, whole turn")
	s.Send(chatsock.Msg("m1", "think first"))
	testkit.Eventually(t, wait, func() bool {
		for _, rq := range r.api.ScenarioRequests() {
			if rq.LastUserText() == "think first" {
				return true
			}
		}
		return false
	}, "the model was never asked")
	if afterTranscript {
		r.waitTranscript(t, `"content":"think first"`)
	}
	kill(t, r.agentPIDs())
	i := s.WaitFor(at, wait, func(e client.Event) bool {
		return e.Type == chat.TypeDelivery && chatsock.FieldOf(e, "message_id") == "m1" &&
			(chatsock.FieldOf(e, "state") == chat.DeliverySubmitted || chatsock.FieldOf(e, "state") == chat.DeliveryFailed ||
				chatsock.FieldOf(e, "state") == chat.DeliveryUnknown)
	}, "m1 settled")
	state := chatsock.FieldOf(s.Get(i), "state")
	if state == chat.DeliveryFailed {
		t.Fatalf("m1 failed, but the model was asked for it:\n%s", chatsock.Summary(s.Snapshot()))
	}
	submitted := state == chat.DeliverySubmitted
	if submitted {
		i = s.WaitFor(i, wait, chatsock.PromptDone("m1", chat.StopError), "the turn ends with the error")
	}
	s.WaitFor(i, wait, func(e client.Event) bool {
		return e.Type == chat.TypeTurnStatus && chatsock.FieldOf(e, "active") != true
	}, "the turn over")
	s.Send(chatsock.Msg("m2", "hello"))
	s.WaitFor(i, wait, chatsock.PromptDone("m2", chat.StopEndTurn), "the next message")
	reqs := r.api.ScenarioRequests()
	texts := reqs[len(reqs)-1].UserTexts()
	kept := slices.ContainsFunc(texts, func(x string) bool { return strings.TrimSpace(x) == "think first" })
	t.Logf("m1 submitted: %v; the resumed conversation has it: %v", submitted, kept)
	if submitted != kept || afterTranscript && !submitted {
		t.Fatalf("m1 submitted=%v, but the resumed session's request has it=%v (user texts %q)", submitted, kept, texts)
	}
}
