package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
)

func TestBadInputGetsAnErrorAndTheConnectionGoesOn(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, nil)
	outside := t.TempDir()
	link := filepath.Join(e.root, "escape")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 2<<20)
	newIn := func(cwd string) string {
		b, _ := json.Marshal(map[string]any{"type": "message", "message_id": "n-" + filepath.Base(cwd), "text": "hi",
			"intent": map[string]any{"new": map[string]any{"cwd": cwd}}})
		return string(b)
	}
	cases := []struct {
		name, input, code, says string
	}{
		{"not JSON", `hello`, chat.CodeBadInput, "JSON object"},
		{"array", `[1,2]`, chat.CodeBadInput, "not an array"},
		{"unknown type", `{"type":"launch_missiles"}`, chat.CodeBadInput, `unknown input type "launch_missiles"`},
		{"no type", `{"text":"hi"}`, chat.CodeBadInput, `no "type"`},
		{"message without id", `{"type":"message","text":"hi"}`, chat.CodeBadInput, `"message_id" is missing`},
		{"message without text", `{"type":"message","message_id":"x1"}`, chat.CodeBadInput, `needs "text"`},
		{"wrong field type", `{"type":"message","message_id":"x2","text":5}`, chat.CodeBadInput, "wrong type"},
		{"answer without request", `{"type":"permission_response","option_id":"allow"}`, chat.CodeBadInput, `"request_id" is missing`},
		{"2 MiB message", `{"type":"message","message_id":"big","text":"` + big + `"}`, chat.CodeTooLarge, "larger than the limit"},
		{"cwd with ..", newIn(filepath.Join(e.root, "..", "..")), chat.CodeForbidden, "outside the allowed roots"},
		{"cwd symlinked out of the root", newIn(link), chat.CodeForbidden, "outside the allowed roots"},
		{"relative cwd", newIn("work"), chat.CodeForbidden, "absolute"},
		{"stop with no thread", `{"type":"stop"}`, chat.CodeBadInput, "no turn"},
	}
	c := e.dial("bad", -1)
	c.WaitFor(0, 30*time.Second, chatsock.Type(chat.TypeReplayDone), "ready")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			from := len(c.Snapshot())
			c.Send([]byte(tc.input))
			i := c.WaitFor(from, 30*time.Second, chatsock.Type(chat.TypeError), "an error")
			ev := c.Snapshot()[i]
			if got := chatsock.FieldOf(ev, "code"); got != tc.code {
				t.Errorf("code: got %v, want %s (%s)", got, tc.code, ev.Raw)
			}
			if got := fmt.Sprint(chatsock.FieldOf(ev, "message")); !strings.Contains(got, tc.says) {
				t.Errorf("message: got %q, want it to say %q", got, tc.says)
			}
			// The connection goes on.
			c.Send(map[string]any{"type": "ping"})
			c.WaitFor(i, 30*time.Second, chatsock.Type(chat.TypePong), "pong after the error")
		})
	}
	// Nothing was stored for the refused inputs: no thread, no input.
	var threads struct{ Threads []chat.Thread }
	e.getJSON("/api/threads", &threads)
	if len(threads.Threads) != 0 {
		t.Fatalf("threads after bad input: %d, want 0", len(threads.Threads))
	}
	// And the connection goes on: a good message still works.
	c.Send(chatsock.Msg("good", "say fine"))
	c.WaitFor(0, 30*time.Second, chatsock.PromptDone("good", chat.StopEndTurn), "good message after the bad ones")
	// Controls that name nothing live are refused too, and the thread goes on.
	for _, tc := range []struct{ input, code, says string }{
		{`{"type":"stop"}`, chat.CodeBadInput, "no turn is running"},
		{`{"type":"permission_response","request_id":"nope","option_id":"allow"}`, chat.CodeCardClosed, "no longer open"},
		{`{"type":"question_answer","request_id":"nope","answers":{"q":"a"}}`, chat.CodeCardClosed, "no longer open"},
	} {
		from := len(c.Snapshot())
		c.Send([]byte(tc.input))
		i := c.WaitFor(from, 30*time.Second, chatsock.Type(chat.TypeError), "an error")
		ev := c.Snapshot()[i]
		if chatsock.FieldOf(ev, "code") != tc.code || !strings.Contains(fmt.Sprint(chatsock.FieldOf(ev, "message")), tc.says) {
			t.Errorf("%s: got %s, want %s saying %q", tc.input, ev.Raw, tc.code, tc.says)
		}
	}
	c.Send(chatsock.Msg("good2", "say still fine"))
	c.WaitFor(0, 30*time.Second, chatsock.PromptDone("good2", chat.StopEndTurn), "thread goes on")
}

func TestInputFloodIsRateLimited(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, nil)
	c := e.ready("flood")
	const n = 1000
	start := time.Now()
	for i := range n {
		c.Send(map[string]any{"type": "ping", "n": i})
	}
	sent := time.Since(start)
	// Every input deserves an answer: the socket's replies wait for room rather
	// than being dropped, so all n are answered, none twice.
	answers := func() (pongs, limited int) {
		for _, ev := range c.Snapshot() {
			switch {
			case ev.Type == chat.TypePong:
				pongs++
			case ev.Type == chat.TypeError && chatsock.FieldOf(ev, "code") == chat.CodeRateLimit &&
				chatsock.FieldOf(ev, "ref") != "after":
				limited++
			}
		}
		return pongs, limited
	}
	testkit.Eventually(t, 10*time.Second, func() bool {
		pongs, limited := answers()
		return pongs+limited >= n && limited > 0
	}, "1000 pings in %v: each answered by a pong or a rate-limit error", sent)
	// The connection and the thread go on: once the rate allows (a token every
	// 50 ms), a message is accepted. A refused copy was never stored, so the same
	// message id can be sent again.
	from := len(c.Snapshot())
	testkit.Eventually(t, 10*time.Second, func() bool {
		for _, ev := range c.Snapshot()[from:] {
			if chatsock.Delivery("after", chat.DeliveryQueued)(ev) {
				return true
			}
		}
		c.Send(chatsock.Msg("after", "say still here"))
		time.Sleep(60 * time.Millisecond) // the limiter's refill interval, not a synchronisation
		return false
	}, "a message accepted after the flood")
	c.WaitFor(0, 5*time.Second, chatsock.PromptDone("after", chat.StopEndTurn), "message after the flood")
	// Long after the flood: exactly one answer per ping, none lost, none twice.
	if pongs, limited := answers(); pongs+limited != n {
		t.Fatalf("%d pings answered by %d pongs and %d rate-limit errors: want exactly %d answers", n, pongs, limited, n)
	}
}

func TestSlowReaderIsDroppedFastReaderKeepsUp(t *testing.T) {
	t.Parallel()
	// A backlog of 1024: the slow reader falls that far behind after some
	// hundreds of chunks (either that or the write watchdog drops it, both
	// counted as slow), while the fast one, read by this same loaded process,
	// has room for a pause (at 256 it was dropped too at load 20).
	e := startDaemon(t, func(c *config.Config) { c.Limits.ConnBuffer = 1024 })
	fast := e.ready("slow")
	// The thread exists first, so the slow reader's connect replays it from seq 1.
	fast.Send(chatsock.Msg("m0", "say before"))
	fast.WaitFor(0, 10*time.Second, chatsock.PromptDone("m0", chat.StopEndTurn), "first turn")
	slowBefore := e.metric(`parley_socket_closed_total{reason="slow"}`)
	// The slow one connects and then never reads.
	ctx := context.Background()
	slow, _, err := client.Dial(ctx, e.url(), e.d.Token(), client.Options{Chat: "slow", Since: -1, ReadLimit: 1 << 30, HTTPClient: testkit.SmallBuffers()})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.CloseNow()
	// 8 KB chunks at a pace a reader keeps up with even on a loaded machine:
	// the slow reader's receive buffer is small (smallBuffers), parley's send
	// buffer holds at most 4 MB (tcp_wmem's default maximum), 512 chunks,
	// then its backlog fills: dropped after at most about 1,600 of 3000.
	const chunks = 3000
	fast.Send(chatsock.Msg("m1", fmt.Sprintf("stream %d 20us 8192", chunks)))
	// 24 MB through a race-built daemon and its store: about 7 s alone, 28 s
	// at load 14; at load 30 to 40 it passed 60 s (failed three times so, the
	// fast socket still open: slow work, not a drop, which ends the socket).
	i := fast.WaitFor(0, 180*time.Second, chatsock.PromptDone("m1", chat.StopEndTurn), "fast reader got the whole turn")
	fast.WaitFor(i, 10*time.Second, chatsock.Field(chat.TypeTurnStatus, "active", false), "turn over")
	got := 0
	for _, ev := range fast.Snapshot() {
		if ev.Type == chat.TypeAgentChunk && strings.HasPrefix(fmt.Sprint(chatsock.FieldOf(ev, "text")), "c") {
			got++
		}
	}
	if got != chunks {
		t.Fatalf("fast reader: %d chunks, want %d", got, chunks)
	}
	live := seqs(fast.Snapshot())
	for k, s := range live {
		if s != int64(k+1) {
			t.Fatalf("fast reader's log is not 1..n without gaps (at %d: %d)", k, s)
		}
	}
	last := live[len(live)-1]
	// parley dropped the slow reader for being slow, and counted it.
	testkit.Eventually(t, 30*time.Second, func() bool {
		return e.metric(`parley_socket_closed_total{reason="slow"}`) == slowBefore+1
	}, "parley_socket_closed_total{reason=\"slow\"} rose by one")
	// The slow reader, reading at last, gets what was already on its way and
	// then finds its connection closed. Its close frame waits behind the data
	// the blocked write could not hand over: the library gives up on it after
	// 5 s and closes the TCP connection, so the reader may see only the end of
	// the stream (no close code). When the close frame did get through, it says
	// why.
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var rerr error
	var seen []int64
	for {
		var ev client.Event
		ev, rerr = slow.Next(rctx)
		if rerr != nil {
			break
		}
		if ev.Seq != 0 {
			seen = append(seen, ev.Seq)
		}
	}
	if rctx.Err() != nil {
		t.Fatal("the slow reader's connection was never closed")
	}
	code, reason := client.CloseStatus(rerr)
	if code != -1 && (code != 4008 || !strings.Contains(reason, "too slow")) {
		t.Fatalf("close: got %d %q, want 4008 saying it was too slow (or no close frame at all)", code, reason)
	}
	t.Logf("slow reader: %d events (seq %d..%d) before the close (%d %q)", len(seen), first(seen), lastOf(seen), code, reason)
	if len(seen) == 0 || seen[0] != 1 {
		t.Fatalf("the slow reader's replay did not start at seq 1: %v", first(seen))
	}
	for k, s := range seen {
		if s != int64(k+1) {
			t.Fatalf("the slow reader got a gap before it was dropped (at %d: %d)", k, s)
		}
	}
	if lastOf(seen) >= last {
		t.Fatalf("the slow reader got all %d events: it was never behind", last)
	}
	// It reconnects with since=<the last seq it saw> and gets the rest, no gap,
	// nothing twice.
	again := e.dial("slow", lastOf(seen))
	end := again.WaitFor(0, 60*time.Second, chatsock.Type(chat.TypeReplayDone), "replay after the drop")
	rest := seqs(again.Snapshot()[:end])
	if len(rest) == 0 || rest[0] != lastOf(seen)+1 || rest[len(rest)-1] != last {
		t.Fatalf("replay since=%d: seqs %d..%d, want %d..%d", lastOf(seen), first(rest), lastOf(rest), lastOf(seen)+1, last)
	}
	for k, s := range rest {
		if s != lastOf(seen)+1+int64(k) {
			t.Fatalf("replay since=%d has a gap at %d: %d", lastOf(seen), k, s)
		}
	}
}

func first(s []int64) int64 {
	if len(s) == 0 {
		return 0
	}
	return s[0]
}

func lastOf(s []int64) int64 {
	if len(s) == 0 {
		return 0
	}
	return s[len(s)-1]
}
