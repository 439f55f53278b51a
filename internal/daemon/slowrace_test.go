package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
)

// A client keeps sending while parley drops it for being slow. Each message is
// either accepted (stored, its receipts in the log) or the client can tell it
// was not: it has no receipt. Following docs/protocol.md, the client reconnects
// and sends again, with the same message_id, every message it holds no receipt
// for: the accepted ones answer with the receipt they have (never delivered
// twice), the others are accepted now. In the end every message is in the log
// exactly once.
func TestInputsRacingASlowCloseAreAcceptedOrResent(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, func(c *config.Config) {
		c.Limits.ConnBuffer = 256 // a drop after a few hundred chunks (TestSlowReaderIsDroppedFastReaderKeepsUp)
		c.Limits.InputsPerSecond, c.Limits.InputBurst = 1000, 1000
		c.Limits.QueueDepth = 1000
	})
	fast := e.ready("race")
	fast.Send(chatsock.Msg("m0", "say before"))
	i := fast.WaitFor(0, 10*time.Second, chatsock.PromptDone("m0", chat.StopEndTurn), "first turn")
	thread := fast.Get(i).Thread
	slowBefore := e.metric(`parley_socket_closed_total{reason="slow"}`)

	ctx := context.Background()
	slow, _, err := client.Dial(ctx, e.url(), e.d.Token(), client.Options{Chat: "race", Since: -1, HTTPClient: testkit.SmallBuffers()})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.CloseNow()
	// The slow client never reads; while the stream below makes parley drop it,
	// it writes a message every 3 ms until its connection fails (or 1 s after
	// the drop).
	var (
		mu      sync.Mutex
		sent    []string
		stopped = make(chan struct{})
		done    = make(chan struct{})
	)
	fast.Send(chatsock.Msg("m1", "stream 3000 20us 8192"))
	leave(fast, i)
	go func() {
		defer close(done)
		for k := 1; ; k++ {
			select {
			case <-stopped:
				return
			default:
			}
			id := fmt.Sprintf("s%d", k)
			mu.Lock()
			sent = append(sent, id) // attempted: a failed write may still have got there
			mu.Unlock()
			wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			err := slow.Send(wctx, chatsock.Msg(id, "echo "+id))
			cancel()
			if err != nil {
				return
			}
			time.Sleep(3 * time.Millisecond) // the client's typing pace, not a synchronisation
		}
	}()
	testkit.Eventually(t, 60*time.Second, func() bool {
		return e.metric(`parley_socket_closed_total{reason="slow"}`) >= slowBefore+1
	}, "the slow client was dropped")
	select {
	case <-done: // its connection failed
	case <-time.After(time.Second):
	}
	close(stopped)
	<-done
	testkit.Eventually(t, 60*time.Second, func() bool {
		_, ended := logged(e, thread)
		return ended["m1"] == chat.StopEndTurn
	}, "the stream turn ended")

	// Which messages made it before the drop: the log knows.
	before, _ := logged(e, thread)
	mu.Lock()
	ids := append([]string(nil), sent...)
	mu.Unlock()
	accepted := 0
	for _, id := range ids {
		if before[id] > 0 {
			accepted++
		}
	}
	t.Logf("the slow client sent %d messages; %d were accepted before the drop", len(ids), accepted)

	// The client read no receipt at all: it sends every one again, same ids.
	again := e.dial("race", -1)
	from := again.WaitFor(0, 30*time.Second, chatsock.Type(chat.TypeReplayDone), "reconnected")
	for _, id := range ids {
		again.Send(chatsock.Msg(id, "echo "+id))
	}
	for _, id := range ids {
		again.WaitFor(from, 60*time.Second, func(ev client.Event) bool {
			return ev.Type == chat.TypeDelivery && chatsock.FieldOf(ev, "message_id") == id
		}, "a receipt for "+id)
	}
	after, _ := logged(e, thread)
	for _, id := range ids {
		if after[id] != 1 {
			t.Errorf("%s is in the log %d times, want exactly once", id, after[id])
		}
	}
}

// leave closes the client that started the stream once its message is
// submitted: on a loaded machine a client that reads could fall 256 frames
// behind the stream too and be dropped as slow, which would count as the slow
// client's drop. The log, read over REST, says the rest.
func leave(c *chatsock.Conn, from int) {
	c.WaitFor(from, 10*time.Second, chatsock.Delivery("m1", chat.DeliverySubmitted), "m1 submitted")
	c.Client().CloseNow()
}

// logged reads a thread's whole log over REST: how many times each message id
// is in it as a user message, and the stop reason of each message's turn.
func logged(e *testEnv, thread chat.ThreadID) (messages map[string]int, ended map[string]string) {
	messages, ended = map[string]int{}, map[string]string{}
	var since int64
	for {
		var page struct{ Events []json.RawMessage }
		e.getJSON(fmt.Sprintf("/api/threads/%s/events?since=%d&limit=10000", thread, since), &page)
		if len(page.Events) == 0 {
			return messages, ended
		}
		for _, raw := range page.Events {
			var ev struct {
				Type       string `json:"type"`
				Seq        int64  `json:"seq"`
				MessageID  string `json:"message_id"`
				StopReason string `json:"stop_reason"`
			}
			json.Unmarshal(raw, &ev)
			since = ev.Seq
			switch ev.Type {
			case chat.TypeUserMessage:
				messages[ev.MessageID]++
			case chat.TypePromptDone:
				ended[ev.MessageID] = ev.StopReason
			}
		}
	}
}

// A slow client whose inputs wait for answers (pongs here) when parley drops
// it: the reader does not wait for a reply nobody will write, so the socket
// ends and frees its slot (limits.max_sockets) instead of hanging for ever.
func TestDroppedSlowClientWithRepliesWaitingEnds(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, func(c *config.Config) { c.Limits.ConnBuffer = 256; c.Limits.MaxSockets = 2 })
	fast := e.ready("stuck")
	fast.Send(chatsock.Msg("m0", "say before"))
	i := fast.WaitFor(0, 10*time.Second, chatsock.PromptDone("m0", chat.StopEndTurn), "first turn")
	thread := fast.Get(i).Thread
	slowBefore := e.metric(`parley_socket_closed_total{reason="slow"}`)
	ctx := context.Background()
	slow, _, err := client.Dial(ctx, e.url(), e.d.Token(), client.Options{Chat: "stuck", Since: -1, HTTPClient: testkit.SmallBuffers()})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.CloseNow()
	fast.Send(chatsock.Msg("m1", "stream 3000 20us 8192"))
	leave(fast, i)
	// Past a few MB the slow client's socket buffers are full and parley's
	// writes to it block: its pongs now wait for a writer that never comes.
	testkit.Eventually(t, 60*time.Second, func() bool {
		var page struct{ Events []json.RawMessage }
		e.getJSON(fmt.Sprintf("/api/threads/%s/events?since=1000&limit=1", thread), &page)
		return len(page.Events) > 0
	}, "1000 chunks (8 MB) streamed")
	for k := range 30 {
		if err := slow.Send(ctx, map[string]any{"type": "ping", "ref": fmt.Sprint(k)}); err != nil {
			break
		}
	}
	testkit.Eventually(t, 60*time.Second, func() bool {
		return e.metric(`parley_socket_closed_total{reason="slow"}`) >= slowBefore+1
	}, "the slow client was dropped")
	// Its socket's slot comes free: a new socket is accepted.
	testkit.Eventually(t, 30*time.Second, func() bool {
		c, _, err := client.Dial(ctx, e.url(), e.d.Token(), client.Options{Chat: "later"})
		if err != nil {
			return false
		}
		c.CloseNow()
		return true
	}, "a new socket after the slow one was dropped (its slot freed)")
}

// A client that stops reading while its backlog (limits.conn_buffer) still
// has room: parley gives up on the write that hangs after a few seconds, and
// counts the drop as slow all the same (docs/protocol.md), as it does when the
// backlog fills.
func TestHungWriteIsCountedSlow(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, func(c *config.Config) { c.Limits.ConnBuffer = 1 << 20 })
	fast := e.ready("hung")
	slowBefore := e.metric(`parley_socket_closed_total{reason="slow"}`)
	slow, _, err := client.Dial(context.Background(), e.url(), e.d.Token(), client.Options{Chat: "hung", Since: -1, HTTPClient: testkit.SmallBuffers()})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.CloseNow()
	// 12 MB: far past the socket buffers, far short of the backlog.
	fast.Send(chatsock.Msg("m1", "stream 1500 20us 8192"))
	testkit.Eventually(t, 60*time.Second, func() bool {
		return e.metric(`parley_socket_closed_total{reason="slow"}`) >= slowBefore+1
	}, "the connection whose write hung was counted as slow")
}
