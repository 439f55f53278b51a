//go:build e2e

package claude_test

// The timeline of a plain stream turn, from the socket's message to the
// first answer text on the same socket, through the daemon's marks
// (internal/marks) and the relay's stamps of Claude Code's own stdin and
// stdout. Run:
//
//	go test -tags e2e -run '^$' -bench FirstWords -benchtime 100x ./internal/e2e/claude/
//
// Results: docs/benchmarks.md.

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/marks"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
	"github.com/parleyhq/parley/internal/testkit/relay"
)

func BenchmarkFirstWords(b *testing.B) {
	var rules []claudeapi.Rule
	for i := range b.N {
		rules = append(rules, claudeapi.Rule{Match: claudeapi.Match{Exact: fmt.Sprintf("first words %d", i)},
			Reply: claudeapi.Text(fmt.Sprintf("fw%d-a fw%d-b fw%d-c fw%d-d", i, i, i, i), 4, time.Millisecond)})
	}
	logPath := b.TempDir() + "/relay.log"
	self, _ := os.Executable()
	claude := testkit.ClaudeBin(b)
	r := newRig(b, claudeapi.Scenario{Rules: rules}, func(c *config.Config) {
		c.Limits.InputsPerSecond, c.Limits.InputBurst = 1e6, 1e6
		c.Agents[0].Command = self
		maps.Copy(c.Agents[0].Env, relay.Env(claude, logPath))
	})
	ctx := context.Background()
	conn, _, err := client.Dial(ctx, "http://"+r.d.Addr(), r.d.Token(), client.Options{Chat: "bench", Since: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer conn.CloseNow()
	// untilDone reads to the turn's prompt_done; it returns when the first
	// agent_chunk came out of the socket.
	untilDone := func(id string) (first time.Time) {
		wctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		for {
			ev, err := conn.Next(wctx)
			if err != nil {
				b.Fatal(err)
			}
			if ev.Type == chat.TypeAgentChunk && first.IsZero() {
				first = time.Now()
			}
			var p chat.PromptDone
			if ev.Type == chat.TypePromptDone && ev.Decode(&p) == nil && p.MessageID == id {
				return first
			}
		}
	}
	conn.Send(ctx, msgJSON("warm", "warm up")) // starts the agent: not what this measures
	untilDone("warm")

	var mu sync.Mutex
	var all []marks.Mark
	marks.Set(func(m marks.Mark) {
		mu.Lock()
		all = append(all, m)
		mu.Unlock()
	})
	defer marks.Set(nil)
	turns := make([]fwTurn, b.N)
	b.ResetTimer()
	for i := range b.N {
		t := &turns[i]
		t.id = fmt.Sprintf("fw%d", i)
		t.sent = time.Now()
		conn.Send(ctx, msgJSON(t.id, fmt.Sprintf("first words %d", i)))
		t.first = untilDone(t.id)
		t.done = time.Now()
	}
	b.StopTimer()
	marks.Set(nil)
	mu.Lock()
	defer mu.Unlock()
	lines := relay.Read(b, logPath)
	var firsts []time.Duration
	at := map[string][]time.Duration{}  // since the message was written
	gap := map[string][]time.Duration{} // since the stage before
	took := map[string][]time.Duration{}
	for i := range turns {
		t := &turns[i]
		if t.first.IsZero() {
			b.Fatalf("turn %s: no answer text", t.id)
		}
		firsts = append(firsts, t.first.Sub(t.sent))
		prev := t.sent
		for _, s := range append(t.stages(all, lines), fwStage{name: fwRead, at: t.first}) {
			at[s.name] = append(at[s.name], s.at.Sub(t.sent))
			gap[s.name] = append(gap[s.name], s.at.Sub(prev))
			took[s.name] = append(took[s.name], s.took)
			prev = s.at
		}
	}
	relay.Report(b, "socket-to-first-text", firsts)
	var out strings.Builder
	fmt.Fprintf(&out, "the timeline of a plain turn (%d turns), from writing the message to the socket\n", len(turns))
	out.WriteString("| stage | at, p50 (ms) | since the stage before, p50 / p99 (ms) | took, p50 (ms) | turns |\n|---|---|---|---|---|\n")
	for _, name := range append(fwStages, fwRead) {
		if len(at[name]) == 0 {
			continue
		}
		fmt.Fprintf(&out, "| %s | %.3f | %.3f / %.3f | %.3f | %d |\n", name, ms(pct(at[name], 50)),
			ms(pct(gap[name], 50)), ms(pct(gap[name], 99)), ms(pct(took[name], 50)), len(at[name]))
	}
	fmt.Print(out.String())
	b.ReportMetric(0, "ns/op")
}

// fwRead is the last stage: the benchmark reads the first answer text.
const fwRead = "the first answer text read from the socket"

type fwTurn struct {
	id                string
	sent, first, done time.Time
}

// The stages of a plain turn, in the order a turn passes them.
var fwStages = []string{
	"socket read: the message frame decoded",
	"router goroutine takes it",
	"lane takes it",
	"commit: user_message, queued",
	"commit: turn_status, delivering",
	"driver's Prompt called",
	"stdin write",
	"relay: the line reaches Claude Code's stdin",
	"relay: Claude Code's first text_delta line",
	"stdout line parsed (text_delta)",
	"lane takes the agent_chunk",
	"commit: agent_chunk",
	"fan-out: agent_chunk",
	"socket frame: agent_chunk",
	"socket write (uncork)",
}

type fwStage struct {
	name string
	at   time.Time
	took time.Duration
}

// stages finds this turn's stages among the marks and the relay's lines:
// each the first of its kind after the one before it, within the turn.
func (t *fwTurn) stages(all []marks.Mark, lines []relay.Line) []fwStage {
	var out []fwStage
	from := t.sent
	find := func(name string, match func(marks.Mark) bool) {
		for _, m := range all {
			if !m.At.Before(from) && m.At.Before(t.done) && match(m) {
				out = append(out, fwStage{name: name, at: m.At, took: m.Took})
				from = m.At
				return
			}
		}
	}
	is := func(stage, of string) func(marks.Mark) bool {
		return func(m marks.Mark) bool { return m.Stage == stage && m.Of == of }
	}
	has := func(stage, of string) func(marks.Mark) bool {
		return func(m marks.Mark) bool { return m.Stage == stage && strings.Contains(m.Of, of) }
	}
	relayLine := func(name string, in bool, match func(string) bool) {
		for _, l := range lines {
			if l.In == in && !l.At.Before(from) && l.At.Before(t.done) && match(l.Text) {
				out = append(out, fwStage{name: name, at: l.At})
				from = l.At
				return
			}
		}
	}
	find(fwStages[0], is("socket read", "message"))
	find(fwStages[1], is("router", t.id))
	find(fwStages[2], is("lane accept", t.id))
	find(fwStages[3], has("commit", chat.TypeUserMessage))
	find(fwStages[4], has("commit", chat.TypeTurnStatus))
	find(fwStages[5], is("prompt", t.id))
	find(fwStages[6], is("stdin write", "user"))
	relayLine(fwStages[7], true, func(s string) bool { return strings.Contains(s, `"type":"user"`) })
	relayLine(fwStages[8], false, func(s string) bool { return strings.Contains(s, "text_delta") })
	find(fwStages[9], has("stdout line", "text_delta"))
	find(fwStages[10], is("lane update", chat.TypeAgentChunk))
	find(fwStages[11], has("commit", chat.TypeAgentChunk))
	find(fwStages[12], has("fanout", chat.TypeAgentChunk))
	find(fwStages[13], is("socket frame", chat.TypeAgentChunk))
	find(fwStages[14], is("socket write", ""))
	return out
}

func pct(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
