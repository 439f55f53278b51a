package client_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/scriptd"
)

// recorder keeps what a Follow handed on. gate, when set, is called with each
// update before it is recorded and may block, as a busy reader does.
type recorder struct {
	mu      sync.Mutex
	updates []client.Update
	gate    func(client.Update)
}

func (r *recorder) handle(u client.Update) error {
	if r.gate != nil {
		r.gate(u)
	}
	r.mu.Lock()
	r.updates = append(r.updates, u)
	r.mu.Unlock()
	return nil
}

func (r *recorder) count(match func(client.Update) bool) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, u := range r.updates {
		if match(u) {
			n++
		}
	}
	return n
}

// seqs are the seqs of the log events handed on, in order.
func (r *recorder) seqs() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []int64
	for _, u := range r.updates {
		if u.Kind == client.UpdateEvent && u.Event.Seq > 0 {
			out = append(out, u.Event.Seq)
		}
	}
	return out
}

func online(u client.Update) bool { return u.Kind == client.UpdateOnline }

func caughtUp(u client.Update) bool {
	return u.Kind == client.UpdateEvent && u.Event.Type == chat.TypeReplayDone
}

func promptDone(id string) func(client.Update) bool {
	return func(u client.Update) bool {
		var p chat.PromptDone
		return u.Kind == client.UpdateEvent && u.Event.Type == chat.TypePromptDone && u.Event.Decode(&p) == nil && p.MessageID == id
	}
}

// gapless fails unless seqs is 1, 2, … n: nothing missed, nothing twice.
func gapless(t *testing.T, seqs []int64) {
	t.Helper()
	if len(seqs) == 0 {
		t.Fatal("no log events handed on")
	}
	for i, s := range seqs {
		if s != int64(i+1) {
			t.Fatalf("log events handed on are not 1..%d once each: at %d got seq %d (%d events)", len(seqs), i, s, len(seqs))
		}
	}
}

func run(t *testing.T, f *client.Follow, r *recorder) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx, r.handle) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("Run ended with %v, want context.Canceled", err)
		}
	})
}

func send(t *testing.T, f *client.Follow, id, text string) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, func() bool {
		return f.Send(context.Background(), map[string]string{"type": "message", "message_id": id, "text": text}) == nil
	}, "could not send "+id)
}

// The daemon drops a connection that fell behind (4008, counted as slow):
// Follow dials again with since and hands on the rest, each event once.
func TestFollowCatchesUpAfterTheServerDropsIt(t *testing.T) {
	t.Parallel()
	e := scriptd.Start(t, func(c *config.Config) { c.Limits.ConnBuffer = 16 })
	// A small receive buffer: parley's own send buffer (at most 4 MB) and the
	// connection's 16 frames are then all that lies between it and the drop.
	f := client.NewFollow(e.URL(), e.D().Token(), client.Options{Chat: "dropped", Since: -1, ReadLimit: 1 << 30, HTTPClient: testkit.SmallBuffers()})
	f.MinBackoff, f.MaxBackoff = 50*time.Millisecond, 200*time.Millisecond
	release := make(chan struct{})
	var once sync.Once
	r := &recorder{gate: func(u client.Update) {
		// Stop reading at the turn's first chunk, as a busy reader does,
		// until parley has dropped the connection.
		if u.Kind == client.UpdateEvent && u.Event.Type == chat.TypeAgentChunk {
			once.Do(func() { <-release })
		}
	}}
	run(t, f, r)
	testkit.Eventually(t, 10*time.Second, func() bool { return r.count(caughtUp) == 1 }, "not caught up")
	slow := `parley_socket_closed_total{reason="slow"}`
	send(t, f, "m1", "stream 500 0s 16384") // 8 MB: twice what the buffers hold
	testkit.Eventually(t, 60*time.Second, func() bool { return scriptd.Metric(t, e.URL(), e.D().Token(), slow) == 1 }, "parley did not drop the connection that fell behind")
	close(release)
	testkit.Eventually(t, 120*time.Second, func() bool { return r.count(promptDone("m1")) == 1 }, "the turn's end was not handed on")
	if n := r.count(online); n < 2 {
		t.Fatalf("online %d times, want a reconnect after the drop", n)
	}
	gapless(t, r.seqs())
}

// The daemon restarts mid-turn: Follow is offline while it is down, dials
// again with since, and hands on the rest; a message after it goes through.
func TestFollowAcrossADaemonRestart(t *testing.T) {
	t.Parallel()
	e := scriptd.Start(t, nil)
	f := client.NewFollow(e.URL(), e.D().Token(), client.Options{Chat: "restart", Since: -1})
	f.MinBackoff, f.MaxBackoff = 50*time.Millisecond, 200*time.Millisecond
	r := &recorder{}
	run(t, f, r)
	send(t, f, "m1", "stream 100000 5ms")
	testkit.Eventually(t, 10*time.Second, func() bool {
		return r.count(func(u client.Update) bool { return u.Kind == client.UpdateEvent && u.Event.Type == chat.TypeAgentChunk }) >= 3
	}, "no chunks before the restart")
	e.Restart()
	testkit.Eventually(t, 20*time.Second, func() bool { return r.count(promptDone("m1")) == 1 }, "the cut-off turn's end was not handed on after the restart")
	send(t, f, "m2", "say after")
	testkit.Eventually(t, 10*time.Second, func() bool { return r.count(promptDone("m2")) == 1 }, "the turn after the restart did not end")
	if n := r.count(func(u client.Update) bool { return u.Kind == client.UpdateOffline }); n < 1 {
		t.Fatalf("offline %d times, want at least once", n)
	}
	gapless(t, r.seqs())
}

// A live event that skips a seq means something was missed: Follow drops the
// connection and dials again from the last seq it handed on, and what the
// server sends again is not handed on twice. parley never skips a seq; this
// server does, on purpose.
func TestFollowRedialsOnAGap(t *testing.T) {
	t.Parallel()
	frame := func(typ string, seq int64, extra string) string {
		if seq == 0 {
			return fmt.Sprintf(`{"type":%q%s}`, typ, extra)
		}
		return fmt.Sprintf(`{"type":%q,"thread":"t1","seq":%d,"text":"x"%s}`, typ, seq, extra)
	}
	var mu sync.Mutex
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n := len(queries)
		queries = append(queries, r.URL.Query().Get("since")+"@"+r.URL.Query().Get("thread"))
		mu.Unlock()
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		frames := []string{frame("config", 0, `,"chat":"c"`), `{"type":"thread","thread":{"id":"t1"}}`}
		if n == 0 {
			frames = append(frames, frame("agent_chunk", 1, ""), frame("replay_done", 0, `,"last_seq":1`),
				frame("agent_chunk", 2, ""), frame("agent_chunk", 4, "")) // 3 is missing
		} else {
			frames = append(frames, frame("agent_chunk", 2, ""), frame("agent_chunk", 3, ""), frame("agent_chunk", 4, ""),
				frame("replay_done", 0, `,"last_seq":4`), frame("agent_chunk", 5, ""))
		}
		for _, f := range frames {
			if err := c.Write(r.Context(), websocket.MessageText, []byte(f)); err != nil {
				return
			}
		}
		for {
			if _, _, err := c.Read(r.Context()); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	f := client.NewFollow(srv.URL, "tok", client.Options{Chat: "c", Since: -1})
	f.MinBackoff = 10 * time.Millisecond
	r := &recorder{}
	run(t, f, r)
	testkit.Eventually(t, 10*time.Second, func() bool { return len(r.seqs()) == 5 }, "did not get seq 1..5")
	gapless(t, r.seqs())
	mu.Lock()
	defer mu.Unlock()
	if len(queries) != 2 || queries[0] != "@" || queries[1] != "2@t1" {
		t.Fatalf("dials asked for %q, want the tail, then since 2 of t1", queries)
	}
}

// A refused token ends Run with ErrRefused at once; FailFast ends it at the
// first failed dial.
func TestFollowStopsOnARefusedTokenAndFailFast(t *testing.T) {
	t.Parallel()
	e := scriptd.Start(t, nil)
	f := client.NewFollow(e.URL(), "wrong", client.Options{Chat: "bad", Since: -1})
	if err := f.Run(context.Background(), func(client.Update) error { return nil }); err == nil || !strings.Contains(err.Error(), "refused the token") {
		t.Fatalf("Run: %v, want ErrRefused", err)
	}
	f = client.NewFollow("http://127.0.0.1:1", "tok", client.Options{Since: -1})
	f.FailFast = true
	if err := f.Run(context.Background(), func(client.Update) error { return nil }); err == nil {
		t.Fatal("Run with no server and FailFast: nil error")
	}
}
