package acpagent

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/parleyhq/parley/internal/chat"
)

// pingClient is the client end of a pipe: it answers _parley/ping while
// answering is true, and reads (and drops) everything else, as a plugin that
// hangs in its handlers still would.
func pingClient(t *testing.T, r io.Reader, w io.Writer, answering *atomic.Bool) {
	t.Helper()
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
		for sc.Scan() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(sc.Bytes(), &m) != nil || m.Method != "_parley/ping" || !answering.Load() {
				continue
			}
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{}}`+"\n", m.ID)
		}
	}()
}

func TestAHungClientIsResentEverythingAfterItsLastAnsweredPing(t *testing.T) {
	t.Parallel()
	route := chat.RouteKey{Channel: "irc", Chat: "#agents"}
	cursors := NewCursors()
	a := &agent{opt: Options{Cursors: cursors}, log: slog.New(slog.DiscardHandler)}
	toClient, fromAgent := io.Pipe()
	toAgent, fromClient := io.Pipe()
	t.Cleanup(func() { fromAgent.Close(); fromClient.Close() })
	a.conn = acp.NewAgentSideConnection(a, fromAgent, toAgent)
	var answering atomic.Bool
	answering.Store(true)
	pingClient(t, toClient, fromClient, &answering)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	now := time.Now()
	for seq := int64(5); seq <= 7; seq++ { // the thread was shown from seq 5
		cursors.set(route, "t1", seq, now.Add(-time.Minute))
	}
	if !a.ping(ctx, 10*time.Second) {
		t.Fatal("the client answered the ping, but ping says it did not")
	}
	if c, _ := cursors.get(route); c.confirmed != 7 {
		t.Fatalf("after an answered ping: confirmed %d, want 7", c.confirmed)
	}
	// The plugin hangs: what streams on is written to the pipe but never
	// shown, and its pings go unanswered. These were sent well before the
	// connection is given up, so "the last 2 seconds" would not cover them.
	answering.Store(false)
	for seq := int64(8); seq <= 12; seq++ {
		cursors.set(route, "t1", seq, now.Add(-30*time.Second))
	}
	if a.ping(ctx, 200*time.Millisecond) {
		t.Fatal("a hung client's ping counted as answered")
	}
	cursors.rewind(route, now, true)
	c, _ := cursors.get(route)
	if c.seq != 7 {
		t.Errorf("after the hung connection ended: cursor at %d, want 7 (8 to 12 sent again)", c.seq)
	}
}

func TestCursorsRewind(t *testing.T) {
	t.Parallel()
	r := chat.RouteKey{Channel: "irc", Chat: "#a"}
	now := time.Now()
	t.Run("nothing confirmed on a connection with heartbeats: back to where the thread was shown from", func(t *testing.T) {
		c := NewCursors()
		for seq := int64(3); seq <= 6; seq++ {
			c.set(r, "t1", seq, now.Add(-time.Minute))
		}
		c.rewind(r, now, true)
		if got, _ := c.get(r); got.seq != 2 {
			t.Errorf("cursor at %d, want 2", got.seq)
		}
	})
	t.Run("a confirmation of another thread does not count", func(t *testing.T) {
		c := NewCursors()
		c.set(r, "t1", 4, now)
		marked := c.mark()
		c.set(r, "t2", 10, now) // the route moved to another thread
		c.set(r, "t2", 11, now)
		c.confirm(marked)
		c.rewind(r, now, true)
		if got, _ := c.get(r); got.thread != "t2" || got.seq != 9 {
			t.Errorf("cursor at %s/%d, want t2/9", got.thread, got.seq)
		}
	})
	t.Run("a later confirmation wins, an older one does not undo it", func(t *testing.T) {
		c := NewCursors()
		c.set(r, "t1", 1, now)
		old := c.mark()
		c.set(r, "t1", 2, now)
		c.confirm(c.mark())
		c.confirm(old)
		c.set(r, "t1", 3, now)
		c.rewind(r, now, true)
		if got, _ := c.get(r); got.seq != 2 {
			t.Errorf("cursor at %d, want 2", got.seq)
		}
	})
	t.Run("without heartbeats: back by the last Unconfirmed", func(t *testing.T) {
		c := NewCursors()
		c.set(r, "t1", 1, now.Add(-10*time.Second))
		c.set(r, "t1", 2, now.Add(-time.Second))
		c.set(r, "t1", 3, now)
		c.rewind(r, now, false)
		if got, _ := c.get(r); got.seq != 1 {
			t.Errorf("cursor at %d, want 1", got.seq)
		}
	})
}
