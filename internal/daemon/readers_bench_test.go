package daemon_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/config"
)

// envReaders, when set, makes this test binary the readers of
// BenchmarkEventLatencyReadersApart (TestMain): its value is a readersJob.
const envReaders = "PARLEY_BENCH_READERS"

type readersJob struct {
	URL, Token            string
	Conns, Rounds, Chunks int
	Pace                  string
}

type readersResult struct {
	latencies
	CPU time.Duration // the readers' process's, for the timed rounds
	Err string
}

// BenchmarkEventLatencyReadersApart is BenchmarkEventLatency with its readers
// in another process, as a person's browsers are: the daemon's process has
// only the server's work, and its CPU per chunk (srv-cpu-µs/chunk) is the
// server's alone; the readers' own is rd-cpu-µs/chunk. The two processes
// still share the machine's two cores.
func BenchmarkEventLatencyReadersApart(b *testing.B) {
	for _, conns := range []int{1, 100} {
		b.Run(fmt.Sprintf("conns=%d", conns), func(b *testing.B) {
			d := benchDaemon(b, stampDriver{}, func(c *config.Config) { c.Limits.MaxSockets = 2 * conns })
			const chunks = 200
			job, _ := json.Marshal(readersJob{URL: "http://" + d.Addr(), Token: d.Token(), Conns: conns, Rounds: b.N, Chunks: chunks, Pace: "2ms"})
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), envReaders+"="+string(job))
			cmd.Stderr = os.Stderr
			in, _ := cmd.StdinPipe()
			out, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			defer func() { cmd.Process.Kill(); cmd.Wait() }()
			lines := bufio.NewReader(out)
			if l, err := lines.ReadString('\n'); err != nil || l != "ready\n" {
				b.Fatalf("readers: %q, %v", l, err)
			}
			sched0 := schedLatency()
			cpu0 := cpuTime()
			b.ResetTimer()
			fmt.Fprintln(in, "go")
			l, err := lines.ReadString('\n')
			b.StopTimer()
			cpu := cpuTime() - cpu0
			sched1 := schedLatency()
			var res readersResult
			if err != nil || json.Unmarshal([]byte(l), &res) != nil || res.Err != "" {
				b.Fatalf("readers: %v %s %s", err, res.Err, l)
			}
			res.latencies.report(b)
			b.ReportMetric(float64(cpu.Microseconds())/float64(chunks*b.N), "srv-cpu-µs/chunk")
			b.ReportMetric(float64(res.CPU.Microseconds())/float64(chunks*b.N), "rd-cpu-µs/chunk")
			b.ReportMetric(float64(schedPercentile(sched0, sched1, 0.99).Microseconds())/1000, "srv-sched-p99-ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// runReaders is the readers' process: it dials the job's connections, has the
// first one start the thread, says "ready", and on "go" reads the job's
// rounds, the first connection sending each round's message; it prints its
// readersResult as one line of JSON.
func runReaders(job string) int {
	var j readersJob
	res := readersResult{}
	err := json.Unmarshal([]byte(job), &j)
	if err == nil {
		err = readRounds(j, &res)
	}
	if err != nil {
		res.Err = err.Error()
	}
	line, _ := json.Marshal(res)
	fmt.Println(string(line))
	return 0
}

func readRounds(j readersJob, res *readersResult) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	readers := make([]*client.Conn, j.Conns)
	arrivals := make([]*arrivalConn, j.Conns)
	for i := range readers {
		c, _, err := client.Dial(ctx, j.URL, j.Token, client.Options{Chat: "lat", Since: -1,
			HTTPClient: arrivalClient(func(c *arrivalConn) { arrivals[i] = c })})
		if err != nil {
			return err
		}
		defer c.CloseNow()
		if err := readUntil(ctx, c, chat.TypeReplayDone); err != nil {
			return err
		}
		readers[i] = c
	}
	// The first message makes the thread and attaches the route.
	if err := readers[0].Send(ctx, msgJSON("warm", "1 0s")); err != nil {
		return err
	}
	for _, r := range readers {
		if err := readUntil(ctx, r, chat.TypePromptDone); err != nil {
			return err
		}
	}
	fmt.Println("ready")
	if l, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil || strings.TrimSpace(l) != "go" {
		return fmt.Errorf("readers: no go: %q, %v", l, err)
	}
	cpu0 := cpuTime()
	for n := range j.Rounds {
		err := res.round(readers, arrivals, j.Chunks, func() error {
			return readers[0].Send(ctx, msgJSON(fmt.Sprintf("l%d", n), fmt.Sprintf("%d %s", j.Chunks, j.Pace)))
		})
		if err != nil {
			return err
		}
	}
	res.CPU = cpuTime() - cpu0
	return nil
}

func readUntil(ctx context.Context, c *client.Conn, typ string) error {
	for {
		ev, err := c.Next(ctx)
		if err != nil {
			return err
		}
		if ev.Type == typ {
			return nil
		}
	}
}
