//go:build e2e

package terminal_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/driver/tmux/pane"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

// slowAnswer is streamed by the scripted model in slowChunks pieces, one every
// slowDelay: Claude Code draws it line by line, and writes it to its
// transcript only once it is whole.
const (
	slowAnswer = "The first line of a slow answer, streamed in pieces.\n\n" +
		"A second paragraph follows, with **bold** and `code`, long enough to wrap around the width of the pane at least once.\n\n" +
		"- item one\n- item two\n\nThe end."
	slowChunks = 24
	slowDelay  = 150 * time.Millisecond
)

// longAnswer is taller than the pane: its prompt scrolls off the screen
// while it is drawn.
var longAnswer = func() string {
	var b strings.Builder
	for i := 1; i <= 50; i++ {
		fmt.Fprintf(&b, "Line %d of a long answer.\n", i)
	}
	return strings.TrimSuffix(b.String(), "\n")
}()

// draftWith matches an agent_draft whose text holds sub.
func draftWith(sub string) func(client.Event) bool {
	return func(ev client.Event) bool {
		if ev.Type != chat.TypeAgentDraft {
			return false
		}
		text, _ := chatsock.FieldOf(ev, "text").(string)
		return text != "" && strings.Contains(text, sub)
	}
}

// noChunk fails the test if evs hold final words: the model's answer is
// held part way, so none can exist yet.
func noChunk(t *testing.T, evs []client.Event) {
	t.Helper()
	for _, ev := range evs {
		if ev.Type == chat.TypeAgentChunk {
			t.Fatalf("final words while the model's answer is held:\n%s", chatsock.Summary(evs))
		}
	}
}

// TestProvisionalTextBeforeTheTranscript: while Claude Code draws a slow
// answer, the socket shows it as agent_draft (provisional) before the
// transcript's words arrive as agent_chunk; every draft is words of the
// answer (nothing shown is wrong), none comes after the final words, the final
// words are the model's, and a replay shows only them. The model stand-in
// holds each answer part way (a claudeapi.Gate) until the drafts showed it,
// so "before the final words" is an order, not a race between the pane and
// the transcript.
func TestProvisionalTextBeforeTheTranscript(t *testing.T) {
	slow, long := claudeapi.NewGate(slowChunks/2), claudeapi.NewGate(23) // 23 of 25 pieces: past line 45
	t.Cleanup(slow.Open)
	t.Cleanup(long.Open)
	td := startTmuxDaemon(t, []claudeapi.Rule{
		{Match: claudeapi.Match{Exact: "tell me slowly"}, Reply: claudeapi.Held(claudeapi.Text(slowAnswer, slowChunks, slowDelay), slow)},
		{Match: claudeapi.Match{Exact: "tell me at length"}, Reply: claudeapi.Held(claudeapi.Text(longAnswer, 25, 120*time.Millisecond), long)}})
	s := chatsock.Dial(t, "http://"+td.d.Addr(), td.d.Token(), client.Options{Chat: "drafts", Since: -1})
	s.WaitFor(0, wait, chatsock.Type(chat.TypeReplayDone), "ready")
	// Another screen of the same chat takes a draft that only grew as what it
	// adds (as the dashboard and parley chat do).
	a := chatsock.Dial(t, "http://"+td.d.Addr(), td.d.Token(), client.Options{Chat: "drafts", Since: -1, DraftAppends: true})
	a.WaitFor(0, wait, chatsock.Type(chat.TypeReplayDone), "ready")

	s.Send(chatsock.Msg("m1", "tell me slowly"))
	at := s.WaitFor(0, wait, chatsock.Delivery("m1", chat.DeliverySubmitted), "submitted")
	first := strings.SplitN(slowAnswer, "\n", 2)[0]
	held := s.WaitFor(at, wait, draftWith(first[:len(first)/2]), "a draft of the held answer")
	noChunk(t, s.Snapshot()[at:held+1])
	slow.Open()
	end := s.WaitFor(at, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "the turn's end")
	evs := s.Snapshot()[:end+1]

	want := pane.Words(slowAnswer)
	firstChunk, drafts, lastSeq := -1, 0, int64(0)
	for i, ev := range evs {
		if ev.Seq > 0 {
			lastSeq = ev.Seq
		}
		switch ev.Type {
		case chat.TypeAgentChunk:
			if firstChunk < 0 {
				firstChunk = i
			}
		case chat.TypeAgentDraft:
			var d chat.AgentDraft
			if err := ev.Decode(&d); err != nil {
				t.Fatal(err)
			}
			if ev.Seq != 0 {
				t.Fatalf("a draft with a seq (a log entry): %s", ev.Raw)
			}
			if d.AfterSeq != lastSeq {
				t.Fatalf("draft after seq %d, but the socket's last event was %d: %s", d.AfterSeq, lastSeq, ev.Raw)
			}
			if d.Text == "" {
				continue
			}
			if firstChunk >= 0 {
				t.Fatalf("provisional text after the final words:\n%s", chatsock.Summary(evs[at:]))
			}
			// What the pane drew so far is the start of the model's words.
			if w := pane.Words(d.Text); !strings.HasPrefix(want, w) {
				t.Fatalf("draft %q is not the start of the answer %q", d.Text, slowAnswer)
			}
			drafts++
		}
	}
	if drafts == 0 || firstChunk < 0 {
		t.Fatalf("%d provisional updates before the final words (first chunk at %d); want at least one:\n%s", drafts, firstChunk, chatsock.Summary(evs[at:]))
	}
	if got := chatsock.Chunks(evs[at:]); got != slowAnswer {
		t.Fatalf("final words %q, want the model's %q", got, slowAnswer)
	}
	t.Logf("%d provisional updates before the transcript's words", drafts)

	// An answer taller than the pane: its prompt scrolls off the screen, and
	// the drafts go on from the pane's history.
	s.Send(chatsock.Msg("m2", "tell me at length"))
	at = s.WaitFor(end, wait, chatsock.Delivery("m2", chat.DeliverySubmitted), "submitted")
	held = s.WaitFor(at, wait, draftWith("Line 40 of"), "a draft past line 40 (the prompt scrolled off at about line 32) while the answer is held")
	noChunk(t, s.Snapshot()[at:held+1])
	long.Open()
	end = s.WaitFor(at, wait, chatsock.PromptDone("m2", chat.StopEndTurn), "the long turn's end")
	for _, ev := range s.Snapshot()[at:end] {
		if ev.Type == chat.TypeAgentChunk {
			break
		}
		if ev.Type == chat.TypeAgentDraft {
			var d chat.AgentDraft
			ev.Decode(&d)
			if !strings.HasPrefix(longAnswer, d.Text) {
				t.Fatalf("draft %q is not the start of the long answer", d.Text)
			}
		}
	}
	if got := chatsock.Chunks(s.Snapshot()[at:end]); got != longAnswer {
		t.Fatalf("final words %q, want the model's", got)
	}

	// The screen taking appends showed each draft as the whole one was, and
	// the long answer grew by appends.
	whole := map[int64]string{}
	for _, ev := range s.Snapshot()[:end] {
		var d chat.AgentDraft
		if ev.Type == chat.TypeAgentDraft && ev.Decode(&d) == nil {
			whole[d.ID] = d.Text
		}
	}
	var shownID int64
	var shown string
	appends := 0
	aEnd := a.WaitFor(0, wait, chatsock.PromptDone("m2", chat.StopEndTurn), "the long turn's end, with appends")
	for _, ev := range a.Snapshot()[:aEnd] {
		var d chat.AgentDraft
		if ev.Type != chat.TypeAgentDraft || ev.Decode(&d) != nil {
			continue
		}
		if d.Extends != 0 {
			appends++
		}
		shownID, shown = d.Onto(shownID, shown)
		if w, ok := whole[d.ID]; ok && (shownID != d.ID || shown != w) {
			t.Fatalf("with appends, draft %d shows %q; whole, it is %q", d.ID, shown, w)
		}
	}
	if appends == 0 {
		t.Fatalf("no draft came as an append:\n%s", chatsock.Summary(a.Snapshot()))
	}
	t.Logf("%d drafts came as appends", appends)

	// A replay after the turns: the final words only, no provisional text.
	r := chatsock.Dial(t, "http://"+td.d.Addr(), td.d.Token(), client.Options{Chat: "drafts", Since: 0})
	done := r.WaitFor(0, wait, chatsock.Type(chat.TypeReplayDone), "the replay")
	replay := r.Snapshot()[:done]
	for _, ev := range replay {
		if ev.Type == chat.TypeAgentDraft {
			t.Fatalf("provisional text in the replay: %s", ev.Raw)
		}
	}
	if got := chatsock.Chunks(replay); got != slowAnswer+longAnswer {
		t.Fatalf("replayed words %q, want %q", got, slowAnswer+longAnswer)
	}
}

// BenchmarkFirstVisibleText measures, for a slowly streamed answer (24
// pieces, 150 ms apart), how long after the message is sent the socket shows the
// first words: provisional (agent_draft, this driver's pane reading) and
// final (agent_chunk, the transcript: all that was shown before).
// Run: go test -tags e2e -run '^$' -bench FirstVisibleText -benchtime 5x ./internal/e2e/terminal/
func BenchmarkFirstVisibleText(b *testing.B) {
	td := startTmuxDaemon(b, []claudeapi.Rule{{Match: claudeapi.Match{Prefix: "slow"}, Reply: claudeapi.Text(slowAnswer, slowChunks, slowDelay)}})
	s := chatsock.Dial(b, "http://"+td.d.Addr(), td.d.Token(), client.Options{Chat: "bench", Since: -1})
	s.WaitFor(0, wait, chatsock.Type(chat.TypeReplayDone), "ready")
	var draft, final time.Duration
	for i := 0; i < b.N; i++ {
		id := fmt.Sprintf("m%d", i)
		from := s.Len()
		t0 := time.Now()
		s.Send(chatsock.Msg(id, fmt.Sprintf("slow %d", i)))
		at := s.WaitFor(from, wait, chatsock.Delivery(id, chat.DeliverySubmitted), "submitted")
		d := s.WaitFor(at, wait, func(ev client.Event) bool {
			return ev.Type == chat.TypeAgentDraft && chatsock.FieldOf(ev, "text") != "" || ev.Type == chat.TypeAgentChunk
		}, "the first words")
		draft += time.Since(t0)
		s.WaitFor(d, wait, chatsock.Type(chat.TypeAgentChunk), "the final words")
		final += time.Since(t0)
		s.WaitFor(at, wait, chatsock.PromptDone(id, chat.StopEndTurn), "the turn's end")
	}
	b.ReportMetric(float64(draft.Milliseconds())/float64(b.N), "ms-first-provisional")
	b.ReportMetric(float64(final.Milliseconds())/float64(b.N), "ms-first-final")
}
