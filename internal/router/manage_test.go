package router

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/fanout"
	"github.com/parleyhq/parley/internal/store"
)

func edit(title *string, archived *bool) *ThreadEdit {
	return &ThreadEdit{Title: title, Archived: archived}
}

func ptr[T any](v T) *T { return &v }

// A thread is renamed and archived through its lane (which owns its row), its
// log says so for every surface, and a message sent to an archived thread
// brings it back. Bad titles are refused with the reason.
func TestRenameAndArchive(t *testing.T) {
	t.Parallel()
	bubble(t, nil, func(t *testing.T, g *rig) {
		ctx := context.Background()
		th := g.sendOK("m1", "say hi")
		synctest.Wait()
		if err := g.r.Control(ctx, Control{Thread: th, Edit: edit(ptr("  Otter census  "), nil)}); err != nil {
			t.Fatalf("rename: %v", err)
		}
		if got := g.thread(th); got.Title != "Otter census" || got.Archived {
			t.Fatalf("after the rename: %+v", got)
		}
		if err := g.r.Control(ctx, Control{Thread: th, Edit: edit(nil, ptr(true))}); err != nil {
			t.Fatalf("archive: %v", err)
		}
		if got := g.thread(th); !got.Archived || got.Title != "Otter census" {
			t.Fatalf("after archiving: %+v", got)
		}
		if n := strings.Count(strings.Join(g.log(th), " "), chat.TypeThreadInfo); n != 2 {
			t.Errorf("thread_info events: %d, want 2: %v", n, g.log(th))
		}
		for _, bad := range []string{"", "   ", strings.Repeat("é", MaxTitleLen+1), "two\nlines"} {
			if err := g.r.Control(ctx, Control{Thread: th, Edit: edit(ptr(bad), nil)}); !errors.Is(err, chat.ErrBadInput) {
				t.Errorf("title %.20q: %v, want bad input", bad, err)
			}
		}
		if err := g.r.Control(ctx, Control{Thread: th, Edit: edit(ptr(strings.Repeat("é", MaxTitleLen)), nil)}); err != nil {
			t.Errorf("a title of %d characters: %v", MaxTitleLen, err)
		}
		if err := g.r.Control(ctx, Control{Thread: "nope", Edit: edit(ptr("x"), nil)}); !errors.Is(err, chat.ErrNotFound) {
			t.Errorf("rename of an unknown thread: %v, want not found", err)
		}
		// Writing to it un-archives it.
		if _, _, err := g.send("m2", "say again"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := g.thread(th); got.Archived {
			t.Errorf("archived after a message: %+v", got)
		}
	})
}

// Deleting a thread whose turn runs stops the turn and ends the agent's
// process, deletes the thread from the store, closes the views showing it
// with the reason, and leaves its route without a thread: the route's next
// message starts a new one.
func TestDeleteStopsTheTurnAndClosesViews(t *testing.T) {
	t.Parallel()
	bubble(t, nil, func(t *testing.T, g *rig) {
		ctx := context.Background()
		th := g.sendOK("m1", "hang")
		synctest.Wait()
		sub, shown, err := g.r.Subscribe(ctx, g.from, 64)
		if err != nil || shown == nil || shown.ID != th {
			t.Fatalf("subscribe: %v, %+v", err, shown)
		}
		if live := g.r.LiveSessions(); len(live) != 1 || !live[0].Busy {
			t.Fatalf("before the delete: %+v; want the busy session", live)
		}
		if err := g.r.DeleteThread(ctx, th); err != nil {
			t.Fatalf("delete: %v", err)
		}
		if g.drv.Closed() != 1 || len(g.r.LiveSessions()) != 0 {
			t.Errorf("after the delete: closed %d, live %+v; want the agent ended", g.drv.Closed(), g.r.LiveSessions())
		}
		if _, err := g.st.Thread(ctx, th); !errors.Is(err, chat.ErrNotFound) {
			t.Errorf("store after the delete: %v", err)
		}
		select {
		case <-sub.Done():
			if r := g.r.fanout.Reason(sub); r != fanout.ReasonDeleted {
				t.Errorf("view closed with %q, want %q", r, fanout.ReasonDeleted)
			}
		default:
			t.Error("the view showing the thread is still open")
		}
		if id, _ := g.r.ThreadOf(ctx, g.from); id != "" {
			t.Errorf("route still shows %s", id)
		}
		if err := g.r.DeleteThread(ctx, th); !errors.Is(err, chat.ErrNotFound) {
			t.Errorf("delete twice: %v, want not found", err)
		}
		if err := g.r.Control(ctx, Control{Thread: th, Edit: edit(ptr("x"), nil)}); !errors.Is(err, chat.ErrNotFound) {
			t.Errorf("rename of the deleted thread: %v, want not found", err)
		}
		_, th2, err := g.send("m2", "say hi")
		if err != nil || th2 == th || th2 == "" {
			t.Fatalf("the route's next message: thread %q, %v; want a new thread", th2, err)
		}
		synctest.Wait()
		if !has(g.log(th2), "prompt_done:m2:end_turn") {
			t.Errorf("the new thread: %v", g.log(th2))
		}
	})
}

type ownsAll struct{ Remote }

func (ownsAll) Owns(id chat.ThreadID) bool { return strings.Contains(string(id), "@") }

// A thread another machine owns is not deleted here: the error says where.
func TestDeleteOfARemoteThreadIsRefused(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, "", func(o *Options) { o.Remote = ownsAll{} })
		defer g.close()
		err := g.r.DeleteThread(context.Background(), "x@b")
		if !errors.Is(err, chat.ErrBadInput) || !strings.Contains(err.Error(), "another machine") {
			t.Errorf("delete x@b: %v; want refused, saying it is on another machine", err)
		}
	})
}

// A thread whose agent is gone from the config moves to another agent: its log
// stays, the new agent starts a fresh session in the same directory, and the
// last messages the person chose go to it with the next message, also after a
// restart between the move and the message. A thread whose agent is still
// configured does not move; nor to an agent that is not configured.
func TestMoveAThreadWhoseAgentIsGone(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		ctx := context.Background()
		g := newRig(t, dir, nil)
		_, th, err := g.send("m1", "first question")
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if _, _, err := g.send("m2", "second question"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if err := g.r.Control(ctx, Control{Thread: th, Edit: &ThreadEdit{Agent: ptr("echo2")}}); !errors.Is(err, chat.ErrBadInput) || !strings.Contains(err.Error(), "still configured") {
			t.Errorf("moving a thread whose agent is there: %v; want refused, saying why", err)
		}
		g.close()

		// The config lost "echo"; "other" takes its threads.
		other := func(o *Options) {
			o.Agents[0].ID = "other"
			o.DefaultAgent = "other"
		}
		g = newRig(t, dir, other)
		if err := g.r.Control(ctx, Control{Thread: th, Edit: &ThreadEdit{Agent: ptr("nobody")}}); !errors.Is(err, chat.ErrBadInput) {
			t.Errorf("moving to an agent not configured: %v; want bad input", err)
		}
		if err := g.r.Control(ctx, Control{Thread: th, Edit: &ThreadEdit{Agent: ptr("other"), ContextMessages: 3}}); err != nil {
			t.Fatalf("move: %v", err)
		}
		got := g.thread(th)
		if got.Agent != "other" || got.SessionID != "" || got.Title != "first question" {
			t.Errorf("after the move: %+v; want agent other, no session, the title kept", got)
		}
		evs, _ := g.st.Tail(ctx, th, 1)
		var info chat.ThreadInfo
		if len(evs) != 1 || evs[0].Type != chat.TypeThreadInfo || evs[0].Decode(&info) != nil ||
			info.Agent != "other" || info.MovedFrom != "echo" || info.ContextMessages != 3 {
			t.Errorf("the log's last event: %+v (%+v); want thread_info moved from echo with 3 messages", evs, info)
		}
		g.close()

		// A restart between the move and the next message keeps the context.
		g = newRig(t, dir, other)
		defer g.close()
		if _, _, err := g.send("m3", "third question"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if _, _, err := g.send("m4", "fourth question"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		ps := g.drv.Prompts()
		if len(ps) != 2 {
			t.Fatalf("prompts after the move: %+v", ps)
		}
		p := ps[0].Text
		for _, want := range []string{`moved to you from the agent "echo"`, "Person: second question", "echo: echo: second question", "third question"} {
			if !strings.Contains(p, want) {
				t.Errorf("the first prompt to the new agent lacks %q:\n%s", want, p)
			}
		}
		if strings.Contains(p, "Person: first question") {
			t.Errorf("the first prompt carries more than 3 messages:\n%s", p)
		}
		if ps[1].Text != "fourth question" {
			t.Errorf("the second prompt: %q; want the message alone", ps[1].Text)
		}
		if !has(g.log(th), "prompt_done:m3:end_turn") || !has(g.log(th), "prompt_done:m1:end_turn") {
			t.Errorf("the log after the move: %v", g.log(th))
		}
	})
}

// goneAgent makes in dir a thread of two messages under the agent "echo",
// then starts a router whose config lost "echo" and has "other" instead
// (its options then changed by mutate, when not nil).
func goneAgent(t *testing.T, dir string, mutate func(*Options)) (*rig, chat.ThreadID) {
	t.Helper()
	g := newRig(t, dir, nil)
	th := g.sendOK("m1", "first question")
	synctest.Wait()
	g.sendOK("m2", "second question")
	synctest.Wait()
	g.close()
	return newRig(t, dir, func(o *Options) {
		lostEcho(o)
		if mutate != nil {
			mutate(o)
		}
	}), th
}

// lostEcho is a config whose agent "echo" is gone; "other" is there instead.
func lostEcho(o *Options) {
	o.Agents[0].ID = "other"
	o.DefaultAgent = "other"
}

// movedWithContext is goneAgent's thread moved to "other" with the last n
// messages as context.
func movedWithContext(t *testing.T, dir string, n int) (*rig, chat.ThreadID) {
	t.Helper()
	g, th := goneAgent(t, dir, nil)
	if err := g.r.Control(context.Background(), Control{Thread: th, Edit: &ThreadEdit{Agent: ptr("other"), ContextMessages: n}}); err != nil {
		t.Fatalf("move: %v", err)
	}
	return g, th
}

// carriesContext fails the test unless text is the moved thread's context
// (goneAgent's second question and its answer) before want.
func carriesContext(t *testing.T, text, want string) {
	t.Helper()
	ctx, msg, ok := strings.Cut(text, "[parley: end of the earlier messages. The person's new message follows.]\n\n")
	if !ok || msg != want || !strings.Contains(ctx, `moved to you from the agent "echo"`) ||
		!strings.Contains(ctx, "Person: second question") || !strings.Contains(ctx, "echo: echo: second question") {
		t.Errorf("the prompt %q; want the moved thread's earlier messages, then %q", text, want)
	}
}

// firstAfterTheMove sends the first message ("m3") to a thread moved with 3
// messages of context, to a new agent that takes 10 s to start.
func firstAfterTheMove(t *testing.T) (*rig, chat.ThreadID) {
	t.Helper()
	g, th := movedWithContext(t, t.TempDir(), 3)
	g.drv.StartDelay = 10 * time.Second
	g.sendOK("m3", "third question")
	return g, th
}

// The context the person chose goes with the first message to reach the new
// agent, whatever arrives while it starts: a second message sent meanwhile
// (already in the log when the first is prompted) does not take it away, and
// goes alone. A first message that never reached the agent (stopped while it
// started) gave it nothing: the next message takes the context.
func TestMovedContextGoesWithTheFirstMessageToReachTheNewAgent(t *testing.T) {
	t.Parallel()
	t.Run("a second message while the agent starts", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			g, th := firstAfterTheMove(t)
			defer g.close()
			g.sendOK("m4", "fourth question")
			time.Sleep(10 * time.Second)
			synctest.Wait()
			ps := g.drv.Prompts()
			if len(ps) != 2 || ps[0].MessageID != "m3" || ps[1].MessageID != "m4" {
				t.Fatalf("prompts after the move: %+v; want m3, then m4", ps)
			}
			carriesContext(t, ps[0].Text, "third question")
			if ps[1].Text != "fourth question" {
				t.Errorf("the second prompt: %q; want the message alone", ps[1].Text)
			}
			if l := g.log(th); !has(l, "prompt_done:m3:end_turn") || !has(l, "prompt_done:m4:end_turn") {
				t.Errorf("the log after the move: %v", l)
			}
		})
	})
	t.Run("the first message stopped before it reached the agent", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			g, th := firstAfterTheMove(t)
			defer g.close()
			synctest.Wait()
			if err := g.r.Control(context.Background(), Control{From: g.from, Stop: true}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Second)
			synctest.Wait()
			if l := g.log(th); !has(l, "delivery:m3:failed") {
				t.Fatalf("after the stop: %v; want m3 failed", l)
			}
			g.sendOK("m4", "fourth question")
			synctest.Wait()
			ps := g.drv.Prompts()
			if len(ps) != 1 || ps[0].MessageID != "m4" {
				t.Fatalf("prompts after the move: %+v; want m4 alone", ps)
			}
			carriesContext(t, ps[0].Text, "fourth question")
			g.sendOK("m5", "fifth question")
			synctest.Wait()
			if ps := g.drv.Prompts(); len(ps) != 2 || ps[1].Text != "fifth question" {
				t.Errorf("prompts: %+v; want m5 alone after m4 reached the agent", ps)
			}
		})
	})
}

// A move whose commit fails changes nothing, on any screen: the thread keeps
// its agent, the old agent's open card stays open (in the store, which every
// screen restates open cards from, and in the lane), nothing is published;
// tried again, the move and the card's closing are stored together, so no
// screen shows a card open that the lane no longer holds. The commit fails in
// real SQLite: a trigger refuses the thread's new agent.
func TestAFailedMoveKeepsTheThreadsCardsAsStored(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		dir := t.TempDir()
		g, th := goneAgent(t, dir, func(o *Options) { o.Logger = slog.New(failOnError{t: t, allow: "commit"}) })
		defer g.close()

		// The lane holds an open card of the old agent. None of today's
		// ways leaves one with the agent gone (a restart expires a dead
		// session's cards), so the test opens it on the lane itself.
		var l *lane
		if err := g.r.call(ctx, func() (err error) { l, err = g.r.lane(ctx, th); return err }); err != nil {
			t.Fatal(err)
		}
		l.ctrl <- func() {
			l.openCard(chat.CardPermission, "p1", chat.PermissionRequest{RequestID: "p1", Tool: chat.PermissionTool{Name: "Bash", Title: "ls"},
				Options: []chat.PermissionOption{{ID: "allow", Label: "Allow", Kind: chat.OptionAllowOnce}}})
		}
		synctest.Wait()
		openCards := func() []chat.Card {
			cs, err := g.st.Cards(ctx, th, chat.CardOpen)
			if err != nil {
				t.Fatal(err)
			}
			return cs
		}
		if cs := openCards(); len(cs) != 1 {
			t.Fatalf("open cards %+v; want p1", cs)
		}
		sub, _, err := g.r.Subscribe(ctx, g.from, 64)
		if err != nil {
			t.Fatal(err)
		}
		defer g.hub.Unsubscribe(sub)

		db := refuseWrites(t, dir, `CREATE TRIGGER refuse_move BEFORE UPDATE ON threads WHEN NEW.agent IS NOT OLD.agent
			BEGIN SELECT RAISE(ABORT, 'the disk refused the move'); END`)
		move := Control{Thread: th, Edit: &ThreadEdit{Agent: ptr("other"), ContextMessages: 2}}
		if err := g.r.Control(ctx, move); err == nil || !strings.Contains(err.Error(), "the disk refused the move") {
			t.Fatalf("the move whose commit fails: %v; want the store's refusal", err)
		}
		synctest.Wait()
		if got := g.thread(th); got.Agent != "echo" {
			t.Errorf("after the failed move the thread's agent is %q; want echo", got.Agent)
		}
		if cs := openCards(); len(cs) != 1 || cs[0].RequestID != "p1" {
			t.Errorf("after the failed move the open cards are %+v; want p1 still open", cs)
		}
		if its := sub.Take(); len(its) != 0 {
			t.Errorf("the failed move published %d events (first %s); want none", len(its), its[0].Event.Type)
		}

		if _, err := db.Exec(`DROP TRIGGER refuse_move`); err != nil {
			t.Fatal(err)
		}
		if err := g.r.Control(ctx, move); err != nil {
			t.Fatalf("the move again: %v", err)
		}
		synctest.Wait()
		if got := g.thread(th); got.Agent != "other" {
			t.Errorf("after the move the thread's agent is %q; want other", got.Agent)
		}
		if cs := openCards(); len(cs) != 0 {
			t.Errorf("after the move %d cards are open (first %s); want none (the old agent can never answer them)", len(cs), cs[0].RequestID)
		}
		if cs, _ := g.st.Cards(ctx, th, chat.CardCancelled); len(cs) != 1 || cs[0].RequestID != "p1" {
			t.Errorf("cancelled cards %+v; want p1", cs)
		}
		var shown []string
		for _, it := range sub.Take() {
			shown = append(shown, it.Event.Type)
		}
		if !slices.Equal(shown, []string{chat.TypePermissionResolved, chat.TypeThreadInfo}) {
			t.Errorf("the move showed %v; want the card's closing and the move", shown)
		}
	})
}

// A thread moved twice (a → b → c) tells c each earlier answer under the
// agent that wrote it: a's before the first move, b's after it.
func TestAMovedThreadsContextNamesEachAnswersAgent(t *testing.T) {
	t.Parallel()
	at := time.Now()
	ev := func(p chat.Payload) chat.Event {
		e, err := chat.NewEvent("t", p, at)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	evs := []chat.Event{
		ev(chat.UserMessage{Text: "first question"}),
		ev(chat.AgentChunk{Text: "a's answer"}),
		ev(chat.ThreadInfo{MovedFrom: "a", ContextMessages: 10}),
		ev(chat.UserMessage{Text: "second question"}),
		ev(chat.AgentChunk{Text: "b's "}),
		ev(chat.AgentChunk{Text: "answer"}),
	}
	got := lastMessages(evs, "b", 10)
	want := []string{"Person: first question", "a: a's answer", "Person: second question", "b: b's answer"}
	if !slices.Equal(got, want) {
		t.Fatalf("the context of a thread moved a → b → c:\n%q\nwant\n%q", got, want)
	}
}

// A step whose commit fails for now (the disk full, say) is kept and stored
// late, never dropped: the agent's words refused by the store are committed,
// in order and with no gap in the log, once the store takes them again, and
// only then shown. A person's message sent meanwhile is refused whole (and
// nothing of it is stored later), while the kept words stay kept. The store
// is real SQLite behind fullDisk, which refuses the agent's words as SQLite
// refuses a write on a full disk (TestAFullDiskHoldsAnAnswerBackAndLosesNone,
// in package daemon, fills a real one).
func TestAnAgentsWordsTheStoreRefusedAreStoredLate(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		dir := t.TempDir()
		full := &fullDisk{}
		g := newRigOn(t, dir, func(st store.Store) store.Store { full.Store = st; return full },
			func(o *Options) { o.Logger = slog.New(failOnError{t: t, allow: "commit"}) })
		defer g.close()
		sub, _, err := g.r.Subscribe(ctx, g.from, 1000)
		if err != nil {
			t.Fatal(err)
		}
		defer g.hub.Unsubscribe(sub)
		full.on.Store(true)
		th := g.sendOK("m1", "say hello\npause 1s\nsay world")
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if log := g.log(th); has(log, chat.TypeAgentChunk) || has(log, "prompt_done:m1:end_turn") {
			t.Fatalf("the refused words are in the log: %v", log)
		}
		if _, _, err := g.send("m2", "say again"); err == nil || !strings.Contains(err.Error(), "could not store the message") {
			t.Fatalf("a message sent while the store refuses the kept words: %v; want refused", err)
		}
		// Shown so far: what was stored (m1's receipts), nothing after it.
		stored := g.log(th)
		var shown []int64
		for _, it := range sub.Take() {
			if !it.Switch && !it.Draft {
				shown = append(shown, it.Seq)
			}
		}
		if len(shown) != len(stored) {
			t.Fatalf("%d events shown while %d were stored: a refused step was shown", len(shown), len(stored))
		}

		full.on.Store(false)
		time.Sleep(commitRetryMax)
		synctest.Wait()
		evs, words := storedWords(t, g, th)
		log := g.log(th)
		if !slices.Equal(words, []string{"hello", "world"}) || !has(log, "prompt_done:m1:end_turn") {
			t.Fatalf("after the store took them again: words %q, log %v; want hello, world and the turn's end", words, log)
		}
		for _, e := range log {
			if strings.Contains(e, ":m2:") {
				t.Fatalf("the refused message m2 is in the log: %v", log)
			}
		}
		for _, it := range sub.Take() {
			if !it.Switch && !it.Draft {
				shown = append(shown, it.Seq)
			}
		}
		for i, seq := range shown {
			if seq != int64(i+1) {
				t.Fatalf("shown seqs %v; want 1, 2, 3… each once", shown)
			}
		}
		if len(shown) != len(evs) {
			t.Fatalf("%d events shown, %d stored", len(shown), len(evs))
		}
		g.sendOK("m2", "say again")
		synctest.Wait()
		if log := g.log(th); !has(log, "prompt_done:m2:end_turn") {
			t.Fatalf("m2 sent again after the store recovered: %v", log)
		}
	})
}

// A step the store refuses for good (a row it will never take: here a
// trigger, as a constraint would) is dropped, as it always was, and the
// thread goes on: kept, it would be refused at every try and hold every
// later step and message back.
func TestAStepTheStoreRefusesForGoodIsDropped(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		g := newRig(t, dir, func(o *Options) { o.Logger = slog.New(failOnError{t: t, allow: "commit"}) })
		defer g.close()
		refuseWrites(t, dir, `CREATE TRIGGER poison BEFORE INSERT ON events WHEN NEW.type = 'agent_chunk' AND CAST(NEW.payload AS TEXT) LIKE '%poison%'
			BEGIN SELECT RAISE(ABORT, 'refused for good'); END`)
		th := g.sendOK("m1", "say poison\npause 1s\nsay fine")
		time.Sleep(2 * time.Second)
		synctest.Wait()
		g.sendOK("m2", "say again")
		synctest.Wait()
		_, words := storedWords(t, g, th)
		if log := g.log(th); !slices.Equal(words, []string{"fine", "again"}) || !has(log, "prompt_done:m2:end_turn") {
			t.Fatalf("words %q, log %v; want the refused step dropped and the thread going on", words, log)
		}
	})
}

// storedWords reads the thread's log from the store, fails the test at a gap
// in its seqs, and returns it with the agent's words in it.
func storedWords(t *testing.T, g *rig, th chat.ThreadID) ([]chat.Event, []string) {
	t.Helper()
	evs, err := g.st.Events(context.Background(), th, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var words []string
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: a gap in the log", i+1, ev.Seq)
		}
		if ev.Type == chat.TypeAgentChunk {
			var c chat.AgentChunk
			ev.Decode(&c)
			words = append(words, c.Text)
		}
	}
	return evs, words
}

// fullDisk refuses, while on, every commit that writes an agent's words, as
// SQLite refuses a write on a full disk: for now (store.ErrUnavailable).
type fullDisk struct {
	store.Store
	on atomic.Bool
}

func (f *fullDisk) Commit(ctx context.Context, b store.Batch) error {
	if f.on.Load() && slices.ContainsFunc(b.Events, func(e chat.Event) bool { return e.Type == chat.TypeAgentChunk }) {
		return fmt.Errorf("sqlite: commit: database or disk is full (13) (%w)", store.ErrUnavailable)
	}
	return f.Store.Commit(ctx, b)
}

// refuseWrites makes the store in dir refuse some writes with a trigger
// (real SQLite failing a commit); the test drops it through the db returned.
func refuseWrites(t *testing.T, dir, trigger string) *sql.DB {
	t.Helper()
	// The store's own connections hold locks now and then (its
	// checkpointer): this one waits for them, as the store's do.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "parley.db")+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(trigger); err != nil {
		t.Fatal(err)
	}
	return db
}
