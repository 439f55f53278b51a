package daemon_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/audit"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
)

func TestAuthAndOrigin(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, nil)
	ctx := context.Background()
	cases := []struct {
		name   string
		token  string
		origin string
		want   int
	}{
		{"no token", "", "", http.StatusUnauthorized},
		{"wrong token", "nope-" + strings.Repeat("x", 40), "", http.StatusUnauthorized},
		{"foreign origin", e.d.Token(), "http://evil.example", http.StatusForbidden},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{}
			if c.origin != "" {
				h.Set("Origin", c.origin)
			}
			_, resp, err := client.Dial(ctx, e.url(), c.token, client.Options{Since: -1, Header: h})
			if err == nil {
				t.Fatal("dial succeeded; want refusal")
			}
			if resp == nil || resp.StatusCode != c.want {
				t.Fatalf("got %v, want HTTP %d", resp, c.want)
			}
		})
	}
	t.Run("own origin", func(t *testing.T) {
		h := http.Header{"Origin": {e.url()}}
		c, _, err := client.Dial(ctx, e.url(), e.d.Token(), client.Options{Since: -1, Header: h})
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		ev, err := c.Next(ctx)
		if err != nil || ev.Type != chat.TypeConfig {
			t.Fatalf("first frame: got %v %v, want config", ev.Type, err)
		}
	})
	t.Run("rest without token", func(t *testing.T) {
		resp, err := http.Get(e.url() + "/api/threads")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("got %d, want 401", resp.StatusCode)
		}
	})
}

func TestMessageReceiptsAndAnswer(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, nil)
	c := e.dial("chat1", -1)
	i := c.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypeConfig), "config")
	if i != 0 {
		t.Fatalf("config at %d; want it first", i)
	}
	c.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypeReplayDone), "replay_done")
	c.Send(chatsock.Msg("m1", "hello there"))
	order := []func(client.Event) bool{
		chatsock.Field(chat.TypeUserMessage, "text", "hello there"),
		chatsock.Delivery("m1", chat.DeliveryQueued),
		chatsock.Delivery("m1", chat.DeliveryDelivering),
		chatsock.Delivery("m1", chat.DeliverySubmitted),
		chatsock.Field(chat.TypeAgentChunk, "text", "echo: hello there"),
		chatsock.PromptDone("m1", chat.StopEndTurn),
	}
	at := 0
	for n, m := range order {
		at = c.WaitFor(at, 5*time.Second, m, fmt.Sprintf("step %d", n)) + 1
	}
	// The log is gapless from 1.
	var seqs []int64
	for _, ev := range c.Snapshot() {
		if ev.Seq != 0 {
			seqs = append(seqs, ev.Seq)
		}
	}
	for i, s := range seqs {
		if s != int64(i+1) {
			t.Fatalf("seqs %v: want 1..n without gaps", seqs)
		}
	}
}

func TestTwoConnectionsSameOrderAndSinceReplay(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, nil)
	a := e.dial("shared", -1)
	b := e.dial("shared", -1)
	a.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypeReplayDone), "a ready")
	b.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypeReplayDone), "b ready")
	a.Send(chatsock.Msg("m1", "say one\nsay two"))
	a.WaitFor(0, 5*time.Second, chatsock.PromptDone("m1", chat.StopEndTurn), "a done")
	b.Send(chatsock.Msg("m2", "stream 5 1ms"))
	for _, w := range []*chatsock.Conn{a, b} {
		i := w.WaitFor(0, 5*time.Second, chatsock.PromptDone("m2", chat.StopEndTurn), "done 2")
		w.WaitFor(i, 5*time.Second, chatsock.Field(chat.TypeTurnStatus, "active", false), "turn over")
	}
	seqOf := func(evs []client.Event) []string {
		var out []string
		for _, ev := range evs {
			if ev.Seq != 0 {
				out = append(out, fmt.Sprintf("%d:%s", ev.Seq, ev.Type))
			}
		}
		return out
	}
	sa, sb := seqOf(a.Snapshot()), seqOf(b.Snapshot())
	if strings.Join(sa, ",") != strings.Join(sb, ",") {
		t.Fatalf("connections differ:\n a %v\n b %v", sa, sb)
	}
	// A third connection that holds the first k events gets exactly the rest.
	k := int64(4)
	c := e.dial("shared", k)
	c.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypeReplayDone), "c replay")
	sc := seqOf(c.Snapshot())
	if want := sa[k:]; strings.Join(sc, ",") != strings.Join(want, ",") {
		t.Fatalf("since=%d replay:\n got  %v\n want %v", k, sc, want)
	}
}

func TestStopIsImmediateAndQueuedMessagesThenRun(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, nil)
	c := e.ready("stop")
	c.Send(chatsock.Msg("long", "stream 100000 10ms"))
	c.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypeAgentChunk), "streaming")
	c.Send(chatsock.Msg("q1", "say first queued"))
	c.Send(chatsock.Msg("q2", "say second queued"))
	c.WaitFor(0, 5*time.Second, chatsock.Delivery("q2", chat.DeliveryQueued), "q2 queued")
	// The turn would stream for 1,000 s: cancelled within the wait means the
	// stop reached it, and one session started (checked below) that the
	// agent ended the turn, not the lane after its stop grace. (How fast is a
	// benchmark's to say; a time limit here failed a loaded machine at 527 ms.)
	c.Send(map[string]any{"type": "stop"})
	c.WaitFor(0, 5*time.Second, chatsock.PromptDone("long", chat.StopCancelled), "cancelled")
	c.WaitFor(0, 5*time.Second, chatsock.Field(chat.TypeAgentChunk, "text", "first queued"), "q1 ran")
	c.WaitFor(0, 5*time.Second, chatsock.PromptDone("q2", chat.StopEndTurn), "q2 ran")
	// A turn the lane had to end itself (the stop grace) would have closed
	// the session, and q1 would have started another.
	if n := e.drv.Starts(); n != 1 {
		t.Errorf("%d sessions started; want 1: the stop was not honoured by the agent and the lane forced it", n)
	}
}

func TestRacingNewIntentsApplyInOneOrder(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, nil)
	dirs := []string{filepath.Join(e.root, "a"), filepath.Join(e.root, "b")}
	for _, d := range dirs {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tabs := []*chatsock.Conn{e.dial("race", -1), e.dial("race", -1)}
	for _, tab := range tabs {
		tab.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypeReplayDone), "ready")
	}
	const rounds = 10
	var wg sync.WaitGroup
	for i, tab := range tabs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				tab.Send(map[string]any{"type": "message", "message_id": fmt.Sprintf("t%d-%d", i, r),
					"text": "say hi", "intent": map[string]any{"new": map[string]any{"cwd": dirs[i]}}})
			}
		}()
	}
	wg.Wait()
	// Twenty threads made and started at once, beside the package's other
	// parallel tests under -race: CI's loaded runner once took longer than
	// 10 s (the daemon's log now comes with a failure).
	var delivered int
	testkit.Eventually(t, 30*time.Second, func() bool { delivered = len(e.drv.Prompts()); return delivered == 2*rounds },
		"every message delivered (%v)", countOf(&delivered, 2*rounds))
	// Each message went to a thread its own intent made: the thread's cwd is the
	// intent's, and no thread got two messages.
	var threads struct{ Threads []chat.Thread }
	e.getJSON("/api/threads", &threads)
	cwd := map[chat.ThreadID]string{}
	for _, th := range threads.Threads {
		cwd[th.ID] = th.Cwd
	}
	seen := map[chat.ThreadID]bool{}
	for _, p := range e.drv.Prompts() {
		i := p.MessageID[1] - '0'
		if cwd[p.Thread] != dirs[i] {
			t.Errorf("%s went to a thread in %s; want %s", p.MessageID, cwd[p.Thread], dirs[i])
		}
		if seen[p.Thread] {
			t.Errorf("thread %s got two messages", p.Thread)
		}
		seen[p.Thread] = true
	}
	// Both tabs saw the same sequence of thread switches.
	switches := func(w *chatsock.Conn) []string {
		var out []string
		for _, ev := range w.Snapshot() {
			if ev.Type == chat.TypeThread {
				var te chat.ThreadEvent
				_ = ev.Decode(&te)
				out = append(out, string(te.Thread.ID))
			}
		}
		return out
	}
	testkit.Eventually(t, 5*time.Second, func() bool {
		return len(switches(tabs[0])) == 2*rounds && len(switches(tabs[1])) == 2*rounds
	}, "both tabs saw %d thread switches", 2*rounds)
	if a, b := switches(tabs[0]), switches(tabs[1]); strings.Join(a, ",") != strings.Join(b, ",") {
		t.Fatalf("tabs saw different orders:\n%v\n%v", a, b)
	}
}

func TestCardAnsweredOnceForEveryConnection(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, nil)
	a := e.dial("cards", -1)
	b := e.dial("cards", -1)
	a.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypeReplayDone), "a ready")
	b.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypeReplayDone), "b ready")
	a.Send(chatsock.Msg("m1", "permission Bash"))
	i := a.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypePermissionRequest), "card on a")
	b.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypePermissionRequest), "card on b")
	rid := chatsock.FieldOf(a.Snapshot()[i], "request_id").(string)
	b.Send(map[string]any{"type": "permission_response", "request_id": rid, "option_id": "allow"})
	a.WaitFor(0, 5*time.Second, chatsock.Field(chat.TypePermissionResolved, "option_id", "allow"), "resolved on a")
	a.WaitFor(0, 5*time.Second, chatsock.Field(chat.TypeAgentChunk, "text", "permission: allow"), "agent got the answer")
	a.Send(map[string]any{"type": "permission_response", "request_id": rid, "option_id": "reject"})
	a.WaitFor(0, 5*time.Second, chatsock.Field(chat.TypeError, "code", chat.CodeCardClosed), "late answer refused")
	a.WaitFor(0, 5*time.Second, chatsock.PromptDone("m1", chat.StopEndTurn), "turn over")
	// A new connection replays the card and its resolution, and no open card.
	c := e.dial("cards", -1)
	end := c.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypeReplayDone), "replay")
	requests := 0
	for _, ev := range c.Snapshot()[:end] {
		if ev.Type == chat.TypePermissionRequest {
			requests++
			if ev.Seq == 0 || ev.Restated {
				t.Errorf("an answered card was sent again as open: %s", ev.Raw)
			}
		}
	}
	if requests != 1 {
		t.Fatalf("replay has %d permission requests, want 1 (the logged one)", requests)
	}
}

func TestOpenCardSentAgainAfterReplay(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, nil)
	a := e.ready("open")
	a.Send(chatsock.Msg("m1", "question Which?|red,blue"))
	i := a.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypeQuestion), "question")
	seq := a.Snapshot()[i].Seq
	// Reconnect holding everything: the open card still comes again, restated
	// and unsequenced.
	b := e.dial("open", seq)
	b.WaitFor(0, 5*time.Second, func(ev client.Event) bool { return ev.Type == chat.TypeQuestion && ev.Seq == 0 && ev.Restated }, "open card again")
	rid := chatsock.FieldOf(a.Snapshot()[i], "request_id")
	b.Send(map[string]any{"type": "question_answer", "request_id": rid, "answers": map[string]any{"Which?": "blue"}})
	a.WaitFor(0, 5*time.Second, chatsock.Field(chat.TypeAgentChunk, "text", "answer: Which?=blue"), "answer reached the agent")
}

func TestDuplicateMessageIDDeliveredOnce(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, nil)
	c := e.ready("dup")
	c.Send(chatsock.Msg("same", "say once"))
	c.Send(chatsock.Msg("same", "say once"))
	c.WaitFor(0, 5*time.Second, chatsock.PromptDone("same", chat.StopEndTurn), "done")
	// A retry after a reconnect, too.
	d := e.ready("dup")
	d.Send(chatsock.Msg("same", "say once"))
	d.WaitFor(0, 5*time.Second, func(ev client.Event) bool {
		return ev.Seq == 0 && chatsock.Delivery("same", chat.DeliverySubmitted)(ev)
	}, "current receipt")
	if n := len(e.drv.Prompts()); n != 1 {
		t.Fatalf("agent got %d prompts, want 1", n)
	}
}

// TestMessageIDIsTheRoutes: a message id is unique on the route that sent it.
// Another chat's message with the same id is its own message, delivered with
// its own text; the same route sending it again gets the first one's receipt.
func TestMessageIDIsTheRoutes(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, nil)
	alpha, beta := e.dial("alpha", -1), e.dial("beta", -1)
	for _, c := range []*chatsock.Conn{alpha, beta} {
		c.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypeReplayDone), "ready")
	}
	alpha.Send(chatsock.Msg("same", "say from alpha"))
	alpha.WaitFor(0, 5*time.Second, chatsock.PromptDone("same", chat.StopEndTurn), "alpha's message answered")
	beta.Send(chatsock.Msg("same", "say from beta"))
	beta.WaitFor(0, 5*time.Second, chatsock.Field(chat.TypeAgentChunk, "text", "from beta"), "beta's own message answered")
	beta.WaitFor(0, 5*time.Second, chatsock.PromptDone("same", chat.StopEndTurn), "beta's turn done")

	// The same route sending it again: the first copy's receipt, not a delivery.
	alpha.Send(chatsock.Msg("same", "say from alpha"))
	alpha.WaitFor(0, 5*time.Second, func(ev client.Event) bool {
		return ev.Seq == 0 && chatsock.Delivery("same", chat.DeliverySubmitted)(ev)
	}, "alpha's duplicate answered with its receipt")

	// A failed id is the route's too: another route's copy is its own message,
	// and the route that sent it retries it.
	alpha.Send(chatsock.Msg("f", "flaky"))
	i := alpha.WaitFor(0, 5*time.Second, chatsock.Delivery("f", chat.DeliveryFailed), "alpha's f failed")
	beta.Send(chatsock.Msg("f", "say beta's f"))
	beta.WaitFor(0, 5*time.Second, chatsock.PromptDone("f", chat.StopEndTurn), "beta's f delivered")
	alpha.Send(chatsock.Msg("f", "flaky"))
	alpha.WaitFor(i, 5*time.Second, chatsock.PromptDone("f", chat.StopEndTurn), "alpha's retry delivered")

	var got []string
	for _, p := range e.drv.Prompts() {
		got = append(got, p.MessageID+": "+p.Text)
	}
	want := []string{"same: say from alpha", "same: say from beta", "f: say beta's f", "f: flaky"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("the agent got %q, want %q", got, want)
	}
}

func TestIdleUnloadThenResume(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, func(c *config.Config) { c.Agents[0].IdleTimeout = config.Duration{Duration: 50 * time.Millisecond} })
	c := e.ready("idle")
	c.Send(chatsock.Msg("m1", "say hi"))
	c.WaitFor(0, 5*time.Second, chatsock.Field(chat.TypeSessionInfo, "state", "unloaded"), "unloaded")
	// The session is closed off the lane, after the unload is said.
	testkit.Eventually(t, 5*time.Second, func() bool { return e.drv.Closed() == 1 }, "the unloaded session was never closed")
	testkit.Eventually(t, 5*time.Second, func() bool { return e.metric("parley_live_sessions") == 0 }, "parley_live_sessions after the idle unload: want 0")
	c.Send(chatsock.Msg("m2", "say again"))
	c.WaitFor(0, 5*time.Second, chatsock.PromptDone("m2", chat.StopEndTurn), "resumed turn")
	if r := e.drv.Resumes(); len(r) != 1 || r[0] == "" {
		t.Fatalf("resumes: got %v, want the first session's id", r)
	}
}

func TestAgentCrashEndsTurnWithErrorAndRecovers(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, nil)
	c := e.ready("crash")
	c.Send(chatsock.Msg("m1", "crash"))
	c.WaitFor(0, 5*time.Second, chatsock.PromptDone("m1", chat.StopError), "error end")
	if got := e.metric("parley_live_sessions"); got != 0 {
		t.Errorf("parley_live_sessions after the crash: got %v, want 0", got)
	}
	c.Send(chatsock.Msg("m2", "say back"))
	c.WaitFor(0, 5*time.Second, chatsock.PromptDone("m2", chat.StopEndTurn), "recovered")
	if e.drv.Starts() != 2 {
		t.Fatalf("starts: got %d, want 2 (a resume after the crash)", e.drv.Starts())
	}
	if got := e.metric("parley_live_sessions"); got != 1 {
		t.Errorf("parley_live_sessions after the recovery: got %v, want 1", got)
	}
}

func TestRESTSendIsTheSameSendPath(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, nil)
	c := e.ready("rest")
	c.Send(chatsock.Msg("m1", "say first"))
	i := c.WaitFor(0, 5*time.Second, chatsock.PromptDone("m1", chat.StopEndTurn), "first")
	thread := c.Snapshot()[i].Thread
	body := `{"message_id":"r1","text":"say from rest"}`
	req, _ := http.NewRequest("POST", e.url()+"/api/threads/"+string(thread)+"/messages", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+e.d.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("REST send: %d", resp.StatusCode)
	}
	// The socket on the thread sees it like any message.
	c.WaitFor(0, 5*time.Second, chatsock.Delivery("r1", chat.DeliverySubmitted), "REST message receipts on the socket")
	c.WaitFor(0, 5*time.Second, chatsock.Field(chat.TypeAgentChunk, "text", "from rest"), "answer")
}

func TestRetryOfAFailedMessageReusesItsID(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, nil)
	c := e.ready("retry")
	c.Send(chatsock.Msg("m1", "flaky"))
	i := c.WaitFor(0, 5*time.Second, chatsock.Delivery("m1", chat.DeliveryFailed), "first delivery failed")
	if d := chatsock.FieldOf(c.Get(i), "detail"); !strings.Contains(fmt.Sprint(d), "refused this delivery once") {
		t.Fatalf("failed without the driver's reason: %s", c.Get(i).Raw)
	}
	c.Send(chatsock.Msg("m1", "flaky"))
	c.WaitFor(i, 5*time.Second, chatsock.PromptDone("m1", chat.StopEndTurn), "the retry delivered")
	users := 0
	for _, ev := range c.Snapshot() {
		if ev.Type == chat.TypeUserMessage {
			users++
		}
	}
	if users != 1 {
		t.Fatalf("the retried message appears %d times, want once", users)
	}
	// Once delivered, the same id is a duplicate again.
	c.Send(chatsock.Msg("m1", "flaky"))
	c.WaitFor(0, 5*time.Second, func(ev client.Event) bool {
		return ev.Seq == 0 && chatsock.Delivery("m1", chat.DeliverySubmitted)(ev)
	}, "duplicate after success")
	if n := len(e.drv.Prompts()); n != 1 {
		t.Fatalf("the agent got the message %d times, want once (the retry)", n)
	}
}

// A delivery the driver can prove neither way ends "unknown" with the reason,
// never "failed" (which promises it did not reach the agent), and the same id
// is not delivered again.
func TestUnverifiedDeliveryIsUnknown(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, nil)
	c := e.ready("unverified")
	c.Send(chatsock.Msg("m1", "unverified"))
	i := c.WaitFor(0, 5*time.Second, chatsock.Delivery("m1", chat.DeliveryUnknown), "the unknown receipt")
	if d := fmt.Sprint(chatsock.FieldOf(c.Get(i), "detail")); !strings.Contains(d, "could not tell whether it reached the agent") ||
		!strings.Contains(d, "stopped drawing") {
		t.Fatalf("unknown receipt without its reason: %s", c.Get(i).Raw)
	}
	for _, ev := range c.Snapshot() {
		if chatsock.Delivery("m1", chat.DeliveryFailed)(ev) {
			t.Fatalf("an unverified delivery was reported failed: %s", ev.Raw)
		}
	}
	c.Send(chatsock.Msg("m1", "unverified"))
	c.WaitFor(0, 5*time.Second, func(ev client.Event) bool {
		return ev.Seq == 0 && chatsock.Delivery("m1", chat.DeliveryUnknown)(ev)
	}, "a duplicate answered with the first copy's state")
	// The thread goes on: the next message is delivered.
	c.Send(chatsock.Msg("m2", "say next"))
	c.WaitFor(i, 5*time.Second, chatsock.PromptDone("m2", chat.StopEndTurn), "the next message")
}

func TestOpenThreadAttachesAnotherRoute(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, nil)
	a := e.ready("desk")
	a.Send(chatsock.Msg("m1", "say from the desk"))
	i := a.WaitFor(0, 5*time.Second, chatsock.PromptDone("m1", chat.StopEndTurn), "first")
	thread := a.Get(i).Thread
	phone := e.ready("phone")
	phone.Send(map[string]any{"type": "open_thread", "thread_id": string(thread)})
	j := phone.WaitFor(0, 5*time.Second, func(ev client.Event) bool { return ev.Type == chat.TypeThread && ev.Thread == thread }, "the thread on the phone")
	phone.WaitFor(j, 5*time.Second, chatsock.Field(chat.TypeAgentChunk, "text", "from the desk"), "its history replayed")
	phone.Send(chatsock.Msg("m2", "say from the phone"))
	a.WaitFor(i, 5*time.Second, chatsock.Field(chat.TypeAgentChunk, "text", "from the phone"), "the desk sees the phone's turn")
	phone.Send(map[string]any{"type": "open_thread", "thread_id": "t_nope"})
	phone.WaitFor(j, 5*time.Second, chatsock.Field(chat.TypeError, "code", chat.CodeNotFound), "unknown thread refused")
}

// ready opens a recording socket on a new view of a chat (no events seen yet)
// and waits for its replay to end.
func (e *testEnv) ready(chatID string) *chatsock.Conn {
	e.t.Helper()
	c := e.dial(chatID, -1)
	c.WaitFor(0, 10*time.Second, chatsock.Type(chat.TypeReplayDone), chatID+" ready")
	return c
}

// countOf prints "n of want" with n as it is when printed (a failure message).
func countOf(n *int, want int) fmt.Stringer { return countStringer{n, want} }

type countStringer struct {
	n    *int
	want int
}

func (c countStringer) String() string { return fmt.Sprintf("%d of %d", *c.n, c.want) }

// A rejection with words to an agent that takes none with it (an ACP
// agent's, Gemini CLI's TUI's): the agent gets the rejection, and the words
// go as the person's next message, queued at once and delivered to the
// agent once the turn ended; nothing said is lost, and no error.
func TestARejectionsWordsTheAgentCannotTakeGoAsTheNextMessage(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, nil)
	a := e.ready("words")
	a.Send(chatsock.Msg("m1", "permission-plain Bash\nsay after the card"))
	i := a.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypePermissionRequest), "the card")
	rid := chatsock.FieldOf(a.Snapshot()[i], "request_id").(string)
	a.Send(map[string]any{"type": "permission_response", "request_id": rid, "option_id": "reject", "message": "use go vet instead"})
	a.WaitFor(i, 5*time.Second, chatsock.Field(chat.TypeAgentChunk, "text", "permission: reject"), "the rejection reached the agent, without the words")
	end := a.WaitFor(i, 5*time.Second, chatsock.PromptDone("m1", chat.StopEndTurn), "the card's turn over")
	j := a.WaitFor(i, 5*time.Second, chatsock.Field(chat.TypeUserMessage, "text", "use go vet instead"), "the words as the person's message")
	k := a.WaitFor(j, 5*time.Second, chatsock.Field(chat.TypeAgentChunk, "text", "echo: use go vet instead"), "the words reached the agent")
	if k < end {
		t.Fatalf("the words reached the agent (at %d) before the card's turn ended (at %d)", k, end)
	}
	var resolved chat.PermissionResolved
	for _, ev := range a.Snapshot() {
		switch ev.Type {
		case chat.TypeError:
			t.Fatalf("an error: %s", ev.Raw)
		case chat.TypePermissionResolved:
			_ = ev.Decode(&resolved)
		}
	}
	if resolved.OptionID != "reject" || resolved.Cancelled || resolved.Message != "use go vet instead" {
		t.Fatalf("the card's resolution %+v, want rejected with the words", resolved)
	}
	// The audit trail names who answered as the words' sender, as it names
	// the first message's.
	var trail struct{ Entries []audit.Entry }
	if st := e.getJSON("/api/audit", &trail); st != 200 {
		t.Fatalf("GET /api/audit: %d", st)
	}
	var senders []string
	for _, en := range trail.Entries {
		if en.Kind == audit.KindMessageSent {
			senders = append(senders, en.Actor)
		}
	}
	if len(senders) != 2 || senders[0] != senders[1] || strings.HasPrefix(senders[0], audit.ActorSurface) {
		t.Fatalf("the messages' senders in the audit trail: %q, want the same one twice (the token)", senders)
	}
}
