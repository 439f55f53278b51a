//go:build e2e

package cluster_test

// What the link adds to the stream path, in one run: node b's real Claude Code
// behind a timestamping relay (the test binary, internal/testkit/relay), one
// thread on b driven alternately from the hub's socket and from b's own, each
// turn's prompt timed from its socket to the agent's stdin and each streamed
// chunk from the agent's stdout to the socket that sent the turn.
// Run: go test -tags e2e -run '^$' -bench StreamOverheadAcrossTheLink -benchtime 1x ./internal/e2e/cluster/
// Results: docs/benchmarks.md ("Several machines").

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
	"github.com/parleyhq/parley/internal/testkit/relay"
)

// benchSide is one socket on the benchmark's thread: the hub's or b's own.
type benchSide struct {
	name   string
	prefix string // the words of the turns it sends start with it
	conn   *client.Conn

	mu       sync.Mutex
	sent     map[string]time.Time // prompt text → sent into the socket
	received map[string]time.Time // chunk text → its frame read from the socket
	thread   chat.ThreadID        // the thread its route last showed
	done     chan string          // ids of prompt_done end_turn
	err      error
}

// read reads the socket until it closes: chunks of its own turns are timed,
// the others' only drained (both sockets see every turn of the thread).
func (s *benchSide) read(ctx context.Context) {
	for {
		ev, err := s.conn.Next(ctx)
		if err != nil {
			s.mu.Lock()
			s.err = err
			s.mu.Unlock()
			close(s.done)
			return
		}
		now := time.Now()
		switch ev.Type {
		case chat.TypeAgentChunk:
			var c chat.AgentChunk
			if ev.Decode(&c) == nil && strings.HasPrefix(c.Text, s.prefix) {
				s.mu.Lock()
				s.received[c.Text] = now
				s.mu.Unlock()
			}
		case chat.TypeThread:
			s.mu.Lock()
			s.thread = shownThread(ev)
			s.mu.Unlock()
		case chat.TypePromptDone:
			var p chat.PromptDone
			if ev.Decode(&p) == nil && p.StopReason == chat.StopEndTurn {
				s.done <- p.MessageID
			}
		}
	}
}

// turn sends text as message id and waits for its end.
func (s *benchSide) turn(b *testing.B, id, text string, intent any) {
	b.Helper()
	m := map[string]any{"type": "message", "message_id": id, "text": text}
	if intent != nil {
		m["intent"] = intent
	}
	raw, _ := json.Marshal(m)
	s.mu.Lock()
	s.sent[text] = time.Now()
	s.mu.Unlock()
	if err := s.conn.Send(context.Background(), string(raw)); err != nil {
		b.Fatalf("%s: send: %v", s.name, err)
	}
	deadline := time.After(wait)
	for {
		select {
		case got, ok := <-s.done:
			if !ok {
				b.Fatalf("%s: the socket closed: %v", s.name, s.err)
			}
			if got == id {
				return
			}
		case <-deadline:
			b.Fatalf("%s: turn %s never ended", s.name, id)
		}
	}
}

func BenchmarkStreamOverheadAcrossTheLink(b *testing.B) {
	const turns = 100 // per side
	const words = 8
	rules := []claudeapi.Rule{{Match: claudeapi.Match{Prefix: "warm up"}, Reply: claudeapi.Text("Warm.", 1, 0)}}
	for i := range turns {
		for _, side := range []string{"h", "n"} {
			var ws []string
			for w := range words {
				ws = append(ws, fmt.Sprintf("%s%dw%d ", side, i, w))
			}
			rules = append(rules, claudeapi.Rule{Match: claudeapi.Match{Exact: fmt.Sprintf("%s turn %d", side, i)},
				Reply: claudeapi.Text(strings.Join(ws, ""), words, time.Millisecond)})
		}
	}
	logPath := b.TempDir() + "/relay.log"
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	claude := testkit.ClaudeBin(b)
	unlimited := func(c *config.Config) {
		c.Limits.InputsPerSecond, c.Limits.InputBurst = 1e6, 1e6 // measure parley, not its rate limit
	}
	r := newRigWithConfigs(b, unlimited, func(c *config.Config) {
		unlimited(c)
		c.Agents[0].Command = self
		env := maps.Clone(c.Agents[0].Env) // the hub's agent shares the map
		maps.Copy(env, relay.Env(claude, logPath))
		c.Agents[0].Env = env
	})
	r.api.SetScenario(claudeapi.Scenario{Rules: rules})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dial := func(name, prefix string, m *machine, thread chat.ThreadID) *benchSide {
		conn, _, err := client.Dial(ctx, "http://"+m.d.Addr(), m.d.Token(), client.Options{Chat: "bench-" + name, Since: -1, Thread: thread})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { conn.CloseNow() })
		s := &benchSide{name: name, prefix: prefix, conn: conn, sent: map[string]time.Time{},
			received: map[string]time.Time{}, done: make(chan string, 64)}
		go s.read(ctx)
		return s
	}
	// A first turn from the hub makes the thread on b and starts the agent
	// process; b's own socket then opens the same thread. Neither is measured.
	hub := dial("hub", "h", r.hub, "")
	hub.turn(b, "warm-hub", "warm up from the hub", map[string]any{"new": map[string]any{"cwd": r.work, "node": "b"}})
	hub.mu.Lock()
	_, local, ok := cluster.SplitRemoteID(hub.thread)
	hub.mu.Unlock()
	if !ok {
		b.Fatalf("the hub's route shows %q, not a thread of b", hub.thread)
	}
	node := dial("node", "n", r.node, local)
	node.turn(b, "warm-node", "warm up from the node", nil)
	for _, s := range []*benchSide{hub, node} {
		s.mu.Lock()
		clear(s.sent)
		clear(s.received)
		s.mu.Unlock()
	}

	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		for i := range turns {
			hub.turn(b, fmt.Sprintf("h%d-%d", n, i), fmt.Sprintf("h turn %d", i), nil)
			node.turn(b, fmt.Sprintf("n%d-%d", n, i), fmt.Sprintf("n turn %d", i), nil)
		}
	}
	b.StopTimer()
	cancel()
	lines := relay.Read(b, logPath)
	for _, s := range []*benchSide{hub, node} {
		s.mu.Lock()
		toStdin, toSocket := relay.Overheads(lines, s.sent, s.received)
		s.mu.Unlock()
		relay.Report(b, s.name+"-socket-to-stdin", toStdin)
		relay.Report(b, s.name+"-stdout-to-socket", toSocket)
		b.ReportMetric(float64(len(toStdin)), s.name+"-turns")
		b.ReportMetric(float64(len(toSocket)), s.name+"-chunks")
	}
	b.ReportMetric(0, "ns/op")
}
