package claude_test

// The overhead parley adds on the stream path, measured with a relay between
// parley and the real Claude Code that timestamps every line on the agent's stdin
// and stdout. Run: go test -run '^$' -bench StreamOverhead -benchtime 1x ./internal/e2e/claude/
// Results: docs/benchmarks.md.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

func TestMain(m *testing.M) {
	if target := os.Getenv("PARLEY_RELAY_TARGET"); target != "" {
		os.Exit(relay(target, os.Args[1:], os.Getenv("PARLEY_RELAY_LOG")))
	}
	os.Exit(m.Run())
}

// relay runs target with args, copying stdin and stdout line by line and writing
// "<in|out> <unixnano> <line>" for each line to logPath. The time is taken when
// the line arrives, before it is passed on.
func relay(target string, args []string, logPath string) int {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		return 2
	}
	var mu sync.Mutex
	note := func(dir string, ts int64, line []byte) {
		mu.Lock()
		fmt.Fprintf(logf, "%s %d %s", dir, ts, line)
		mu.Unlock()
	}
	cmd := exec.Command(target, args...)
	cmd.Stderr = os.Stderr
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		return 2
	}
	pump := func(dir string, r io.Reader, w io.Writer, closeW func()) {
		br := bufio.NewReaderSize(r, 1<<20)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				ts := time.Now().UnixNano()
				w.Write(line)
				note(dir, ts, line)
			}
			if err != nil {
				if closeW != nil {
					closeW()
				}
				return
			}
		}
	}
	go pump("in", os.Stdin, in, func() { in.Close() })
	pump("out", out, os.Stdout, nil)
	if err := cmd.Wait(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		return 1
	}
	return 0
}

type relayLine struct {
	dir  string
	ts   time.Time
	line string
}

func readRelayLog(b *testing.B, path string) []relayLine {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	var out []relayLine
	for _, l := range strings.Split(string(data), "\n") {
		dir, rest, ok := strings.Cut(l, " ")
		if !ok {
			continue
		}
		ns, line, _ := strings.Cut(rest, " ")
		n, _ := strconv.ParseInt(ns, 10, 64)
		out = append(out, relayLine{dir: dir, ts: time.Unix(0, n), line: line})
	}
	return out
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
		c.Agents[0].Env["PARLEY_RELAY_TARGET"] = claude
		c.Agents[0].Env["PARLEY_RELAY_LOG"] = logPath
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
	var toStdin, toSocket []time.Duration
	for _, l := range readRelayLog(b, logPath) {
		switch l.dir {
		case "in":
			for text, at := range sent {
				if strings.Contains(l.line, `"content":"`+text+`"`) {
					toStdin = append(toStdin, l.ts.Sub(at))
					delete(sent, text)
				}
			}
		case "out":
			if !strings.Contains(l.line, "text_delta") {
				continue
			}
			for text, at := range received {
				if strings.Contains(l.line, `"text":"`+text+`"`) {
					toSocket = append(toSocket, at.Sub(l.ts))
					delete(received, text)
				}
			}
		}
	}
	report := func(name string, d []time.Duration) {
		slices.Sort(d)
		if len(d) == 0 {
			b.Fatalf("%s: no samples", name)
		}
		b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, name+"-p50-ms")
		b.ReportMetric(float64(d[len(d)*99/100].Microseconds())/1000, name+"-p99-ms")
	}
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
