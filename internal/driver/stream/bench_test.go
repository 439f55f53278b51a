package stream

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

// pipedSession is a session whose stdin and stdout are real OS pipes with
// nothing but the benchmark at the other ends: what it measures is parley's
// own work (encode, hand to the writer, write; scan, decode, map, Sink.Event).
func pipedSession(b *testing.B, sink driver.Sink) (p *proc, agentStdin *os.File, agentStdout *os.File) {
	b.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	p = &proc{session: newSession(sink, slog.New(slog.DiscardHandler), false), stdin: inW, done: make(chan struct{})}
	readDone := make(chan struct{})
	go p.writeLoop()
	go func() {
		defer close(readDone)
		p.readLoop(outR)
	}()
	b.Cleanup(func() {
		outW.Close()
		<-readDone
		close(p.gone)
		inW.Close()
		inR.Close()
		outR.Close()
	})
	return p, inR, outW
}

// percentiles reports p50 and p99 of ds as custom metrics.
func percentiles(b *testing.B, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(ds[len(ds)*99/100].Nanoseconds()), "p99-ns")
}

// BenchmarkPromptToStdin: Session.Prompt called → the line readable on the agent's stdin.
func BenchmarkPromptToStdin(b *testing.B) {
	p, stdin, _ := pipedSession(b, &recSink{})
	r := bufio.NewReaderSize(stdin, 1<<20)
	ctx := context.Background()
	text := strings.Repeat("please look at the failing test and fix it ", 5)
	ds := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		if err := p.Prompt(ctx, driver.Prompt{Text: text}); err != nil {
			b.Fatal(err)
		}
		if _, err := r.ReadSlice('\n'); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(t0))
		p.mu.Lock()
		p.turns = 0
		p.mu.Unlock()
	}
	percentiles(b, ds)
}

// chunkSink signals each agent_chunk.
type chunkSink struct {
	recSink
	got chan struct{}
}

func (c *chunkSink) Event(p chat.Payload) {
	if _, ok := p.(chat.AgentChunk); ok {
		c.got <- struct{}{}
	}
}

// BenchmarkStdoutLineToEvent: a streamed text delta written to the agent's
// stdout → Sink.Event(agent_chunk) called.
func BenchmarkStdoutLineToEvent(b *testing.B) {
	sink := &chunkSink{got: make(chan struct{}, 1)}
	_, _, stdout := pipedSession(b, sink)
	// A real 2.1.197 line (see testdata), 200 bytes of text.
	line := []byte(`{"type":"stream_event","event":{"delta":{"text":"` + strings.Repeat("token ", 33) +
		`","type":"text_delta"},"index":1,"type":"content_block_delta"},"session_id":"4a25812f-9701-4233-97d3-3046a01136f2","parent_tool_use_id":null,"uuid":"ce1a2155-f389-433b-90db-2143b6aadbdc"}` + "\n")
	ds := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		if _, err := stdout.Write(line); err != nil {
			b.Fatal(err)
		}
		<-sink.got
		ds = append(ds, time.Since(t0))
	}
	percentiles(b, ds)
}

// BenchmarkStopToTurnEnded: Session.Cancel during a slowly streamed answer of
// the real Claude Code → Sink.TurnEnded(cancelled). The process is reused:
// each iteration is one more turn of the same session.
func BenchmarkStopToTurnEnded(b *testing.B) {
	srv := claudeapi.Start(b, claudeapi.Scenario{Rules: []claudeapi.Rule{
		{Match: claudeapi.Match{Prefix: "slow"}, Reply: claudeapi.Text(strings.Repeat("word ", 100), 100, 50*time.Millisecond)},
	}})
	home, cwd := b.TempDir(), b.TempDir()
	env, err := claudeapi.WriteHome(srv.URL, home, cwd)
	if err != nil {
		b.Fatal(err)
	}
	sink := &stopSink{chunk: make(chan struct{}, 1), ended: make(chan string, 1)}
	ctx := context.Background()
	s, err := New(nil).Start(ctx, driver.Spec{Command: testkit.ClaudeBin(b), Env: env, Cwd: cwd}, sink)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(ctx)
	ds := make([]time.Duration, 0, b.N)
	for b.Loop() {
		sink.drain()
		if err := s.Prompt(ctx, driver.Prompt{Text: "slow please"}); err != nil {
			b.Fatal(err)
		}
		<-sink.chunk
		t0 := time.Now()
		if err := s.Cancel(ctx); err != nil {
			b.Fatal(err)
		}
		if got := <-sink.ended; got != chat.StopCancelled {
			b.Fatalf("turn ended %s, want cancelled", got)
		}
		ds = append(ds, time.Since(t0))
	}
	percentiles(b, ds)
}

type stopSink struct {
	recSink
	chunk chan struct{}
	ended chan string
}

func (s *stopSink) Event(p chat.Payload) {
	if _, ok := p.(chat.AgentChunk); ok {
		select {
		case s.chunk <- struct{}{}:
		default:
		}
	}
}

func (s *stopSink) TurnEnded(reason string) { s.ended <- reason }

func (s *stopSink) drain() {
	for {
		select {
		case <-s.chunk:
		default:
			return
		}
	}
}

var _ io.Writer = testWriter{}
