//go:build e2e

package claude_test

// The overhead parley adds on the stream path, measured with a relay between
// parley and the real Claude Code that timestamps every line on the agent's stdin
// and stdout. Run: go test -tags e2e -run '^$' -bench StreamOverhead -benchtime 1x ./internal/e2e/claude/
// Results: docs/benchmarks.md.

import (
	"context"
	"fmt"
	"maps"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
	"github.com/parleyhq/parley/internal/testkit/relay"
)

func TestMain(m *testing.M) {
	relay.Main()
	os.Exit(m.Run())
}

func BenchmarkStreamOverhead(b *testing.B) {
	const turns = 200
	const words = 8
	var rules []claudeapi.Rule
	for i := range turns {
		var ws []string
		for w := range words {
			ws = append(ws, fmt.Sprintf("t%dw%d ", i, w))
		}
		rules = append(rules, claudeapi.Rule{Match: claudeapi.Match{Exact: fmt.Sprintf("bench turn %d", i)},
			Reply: claudeapi.Text(strings.Join(ws, ""), words, time.Millisecond)})
	}
	rules = append(rules, claudeapi.Rule{Match: claudeapi.Match{Exact: "slowly"},
		Reply: claudeapi.Text(strings.Repeat("tick ", 2000), 2000, 20*time.Millisecond)})
	logPath := b.TempDir() + "/relay.log"
	self, _ := os.Executable()
	claude := testkit.ClaudeBin(b)
	r := newRig(b, claudeapi.Scenario{Rules: rules}, func(c *config.Config) {
		c.Limits.InputsPerSecond, c.Limits.InputBurst = 1e6, 1e6 // measure parley, not its rate limit
		c.Agents[0].Command = self
		maps.Copy(c.Agents[0].Env, relay.Env(claude, logPath))
	})
	ctx := context.Background()
	conn, _, err := client.Dial(ctx, "http://"+r.d.Addr(), r.d.Token(), client.Options{Chat: "bench", Since: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer conn.CloseNow()
	sent := map[string]time.Time{}     // prompt text → socket send time
	sentID := map[string]time.Time{}   // message id → socket send time
	received := map[string]time.Time{} // chunk text → socket receive time
	var stopLat, toSubmitted []time.Duration
	var recent []string
	next := func(match func(client.Event) bool) {
		wctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		for {
			ev, err := conn.Next(wctx)
			if err != nil {
				b.Fatalf("%v; last frames:\n%s", err, strings.Join(recent, "\n"))
			}
			if recent = append(recent, string(ev.Raw)); len(recent) > 20 {
				recent = recent[1:]
			}
			if ev.Type == chat.TypeAgentChunk {
				var c chat.AgentChunk
				ev.Decode(&c)
				received[c.Text] = time.Now()
			}
			if ev.Type == chat.TypeDelivery {
				var d chat.Delivery
				ev.Decode(&d)
				if at, ok := sentID[d.MessageID]; ok && d.State == chat.DeliverySubmitted {
					toSubmitted = append(toSubmitted, time.Since(at))
					delete(sentID, d.MessageID)
				}
			}
			if match(ev) {
				return
			}
		}
	}
	doneFor := func(id, reason string) func(client.Event) bool {
		return func(ev client.Event) bool {
			var p chat.PromptDone
			return ev.Type == chat.TypePromptDone && ev.Decode(&p) == nil && p.MessageID == id && p.StopReason == reason
		}
	}
	// A first turn starts the agent process; it is not what this measures.
	conn.Send(ctx, msgJSON("warm", "warm up"))
	next(doneFor("warm", chat.StopEndTurn))
	clear(received)
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		for i := range turns {
			text := fmt.Sprintf("bench turn %d", i)
			id := fmt.Sprintf("b%d-%d", n, i)
			sent[text] = time.Now()
			sentID[id] = sent[text]
			conn.Send(ctx, msgJSON(id, text))
			next(doneFor(id, chat.StopEndTurn))
		}
		for i := range 10 {
			id := fmt.Sprintf("s%d-%d", n, i)
			conn.Send(ctx, msgJSON(id, "slowly"))
			next(func(ev client.Event) bool { return ev.Type == chat.TypeAgentChunk })
			start := time.Now()
			conn.Send(ctx, `{"type":"stop"}`)
			next(doneFor(id, chat.StopCancelled))
			stopLat = append(stopLat, time.Since(start))
		}
	}
	b.StopTimer()
	toStdin, toSocket := relay.Overheads(relay.Read(b, logPath), sent, received)
	report := func(name string, d []time.Duration) { relay.Report(b, name, d) }
	report("socket-to-stdin", toStdin)
	report("stdout-to-socket", toSocket)
	report("stop-to-cancelled", stopLat)
	report("socket-to-submitted", toSubmitted)
	b.ReportMetric(float64(len(toStdin)), "turns")
	b.ReportMetric(float64(len(toSocket)), "chunks")
	b.ReportMetric(0, "ns/op")
}

func msgJSON(id, text string) string {
	return fmt.Sprintf(`{"type":"message","message_id":%q,"text":%q}`, id, text)
}
