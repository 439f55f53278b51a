package cluster

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/push"
	"github.com/parleyhq/parley/internal/store"
)

// say commits payloads to thread id of m (made when new), each an event, and
// publishes them unless silent (the link is down).
func (m *machine) say(id chat.ThreadID, silent bool, ps ...chat.Payload) {
	m.t.Helper()
	m.write(id, 0, true) // the thread, when new
	th := m.ths[id]
	var b store.Batch
	for _, p := range ps {
		th.LastSeq++
		ev, err := chat.NewEvent(id, p, time.Now())
		if err != nil {
			m.t.Fatal(err)
		}
		ev.Seq = th.LastSeq
		b.Events = append(b.Events, ev)
	}
	cp := *th
	b.Thread = &cp
	if err := m.st.Commit(context.Background(), b); err != nil {
		m.t.Fatal(err)
	}
	if !silent {
		for _, ev := range b.Events {
			m.hub.Publish(ev)
		}
	}
}

// notice is the hub's copy of a notice of b's thread: "" when none.
func notice(n *push.Notice) string {
	if n == nil {
		return ""
	}
	return fmt.Sprintf("%s@%d", n.Code, n.Seq)
}

// A node's thread summary carries its newest finished turn and its newest
// error that push (by seq and code; an input's refusal does not push), never
// the answer's nor the error's text: at link-up, live, and after the link
// was down while the thread went on (only the newest of each: the hub's
// phones hear of one turn, not of each that ended while it was away).
func TestANodesSummaryCarriesItsNewestFinishedTurnAndError(t *testing.T) {
	t.Parallel()
	h := startHub(t, t.TempDir(), "127.0.0.1:0")
	dataB := join(t, h, "b")
	b := newMachine(t)
	const th = chat.ThreadID("t_one")
	const secret = "stderr: token sk-live-123 leaked"
	b.say(th, true,
		chat.AgentChunk{Text: "the answer's own words"},
		chat.PromptDone{StopReason: chat.StopEndTurn, MessageID: "m1"}, // seq 2
		chat.Error{Code: chat.CodeAgent, Message: secret, Ref: "m2"},   // seq 3
		chat.PromptDone{StopReason: chat.StopCancelled, MessageID: "m2"},
		chat.Error{Code: chat.CodeBusy, Message: "busy", Ref: "m3"})

	dialB := func() *Link {
		l, err := Dial(LinkOptions{DataDir: dataB, Hub: h.Addr(), Node: "b", Heartbeat: testHeartbeat, Store: b.st, Events: b.hub})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.Close)
		return l
	}
	l := dialB()
	remote := RemoteID("b", th)
	notices := func(turn, errv string) func() bool {
		return func() bool {
			rt, ok := remoteThread(t, h, remote)
			return ok && notice(rt.Turn) == turn && notice(rt.Error) == errv
		}
	}
	waitFor(t, 10*time.Second, "the summary's turn and error at link-up", notices("end_turn@2", "agent_error@3"))
	v, err := h.threads.Get(t.Context(), ThreadKey("b", th))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(v.Value(), []byte("sk-live")) || bytes.Contains(v.Value(), []byte("own words")) {
		t.Fatalf("the summary carries a text: %s", v.Value())
	}

	// Live: a turn ends.
	b.say(th, false, chat.AgentChunk{Text: "more"}, chat.PromptDone{StopReason: chat.StopMaxTokens, MessageID: "m4"}) // seq 7
	waitFor(t, 10*time.Second, "the summary's newer turn", notices("max_tokens@7", "agent_error@3"))

	// The link goes down; three turns end and the agent fails; it is back.
	l.Close()
	for range 3 {
		b.say(th, true, chat.PromptDone{StopReason: chat.StopEndTurn})
	}
	b.say(th, true, chat.Error{Code: chat.CodeRestart, Message: secret})                       // seq 11
	b.say(th, true, chat.PromptDone{StopReason: chat.StopRefusal}, chat.AgentChunk{Text: "x"}) // seq 12
	dialB()
	waitFor(t, 10*time.Second, "the newest turn and error after the link was down", notices("refusal@12", "restarted@11"))
}

// A notice in a summary that no push could say (no seq, a code too long for
// any) is dropped at the hub: a node names codes, never words.
func TestAHubDropsANoticeNoPushCouldSay(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		n    *push.Notice
		kept bool
	}{
		{&push.Notice{Seq: 4, Code: chat.StopEndTurn}, true},
		{&push.Notice{Seq: 0, Code: chat.StopEndTurn}, false},
		{&push.Notice{Seq: 4, Code: ""}, false},
		{&push.Notice{Seq: 4, Code: string(bytes.Repeat([]byte("x"), push.MaxNoticeCode+1))}, false},
	} {
		if got := checkNotice(c.n) != nil; got != c.kept {
			t.Errorf("%+v kept %v, want %v", c.n, got, c.kept)
		}
	}
}
