package daemon_test

// Benchmarks of the gateway core over real sockets and real SQLite, with an
// in-process agent that stamps each chunk with the time it was emitted.
// Results and the command that reproduces them: docs/benchmarks.md.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/daemon"
	"github.com/parleyhq/parley/internal/driver"
)

// stampDriver emits the chunks a prompt asks for ("<n> <interval>"), each chunk's
// text being the UnixNano at which it was handed to the sink.
type stampDriver struct{}

type stampSession struct {
	sink driver.Sink
	stop chan struct{}
}

func (stampDriver) Start(_ context.Context, _ driver.Spec, sink driver.Sink) (driver.Session, error) {
	return &stampSession{sink: sink, stop: make(chan struct{})}, nil
}

func (s *stampSession) Prompt(_ context.Context, p driver.Prompt) error {
	f := strings.Fields(p.Text)
	n, _ := strconv.Atoi(f[0])
	iv, _ := time.ParseDuration(f[1])
	go func() {
		// What a real agent says first once it has the prompt: without it the
		// lane does not take the turn as this message's.
		s.sink.Received()
		for i := 0; i < n; i++ {
			if iv > 0 {
				time.Sleep(iv)
			}
			s.sink.Event(chat.AgentChunk{Text: strconv.FormatInt(time.Now().UnixNano(), 10)})
		}
		s.sink.TurnEnded(chat.StopEndTurn)
	}()
	return nil
}

func (s *stampSession) Cancel(context.Context) error { return nil }
func (s *stampSession) AnswerPermission(context.Context, string, driver.PermissionAnswer) error {
	return nil
}
func (s *stampSession) AnswerQuestion(context.Context, string, driver.QuestionAnswer) error {
	return nil
}
func (s *stampSession) SetMode(context.Context, string) error                 { return nil }
func (s *stampSession) SetConfigOption(context.Context, string, string) error { return nil }
func (s *stampSession) Close(context.Context) error                           { return nil }

func benchDaemon(b *testing.B, drv driver.Driver, mutate func(*config.Config)) *daemon.Daemon {
	b.Helper()
	root, _ := filepath.EvalSymlinks(b.TempDir())
	work := filepath.Join(root, "work")
	os.MkdirAll(work, 0o755)
	cfg := testConfig(filepath.Join(root, "data"), work)
	cfg.Limits.InputsPerSecond = 1e6
	cfg.Limits.InputBurst = 1e6
	if mutate != nil {
		mutate(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		b.Fatal(err)
	}
	d, err := daemon.Start(context.Background(), cfg, daemon.Options{Drivers: map[string]driver.Driver{"stream": drv}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		d.Shutdown(ctx)
	})
	return d
}

func dialReady(b *testing.B, d *daemon.Daemon, chatID string) *client.Conn {
	return dialReadyWith(b, d, chatID, nil)
}

// dialReadyWith dials through hc (nil: the default client) and reads the
// connect sequence.
func dialReadyWith(b *testing.B, d *daemon.Daemon, chatID string, hc *http.Client) *client.Conn {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _, err := client.Dial(ctx, "http://"+d.Addr(), d.Token(), client.Options{Chat: chatID, Since: -1, HTTPClient: hc})
	if err != nil {
		b.Fatal(err)
	}
	for {
		ev, err := c.Next(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if ev.Type == chat.TypeReplayDone {
			return c
		}
	}
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p * float64(len(sorted)-1))
	return sorted[i]
}

// BenchmarkEventLatency: time from the driver handing a chunk to the sink to a
// connected reader decoding its frame, with 1, 100 and 1000 readers on one thread.
// Chunks are spaced so the number is latency, not queueing: 2 ms apart, and 20 ms
// with 1000 readers (50,000 frames a second to write and, in this same process,
// to read and decode on two cores).
//
// Each reader does what a client does with a frame: reads it and decodes it
// once. Beside the end-to-end p50/p99 it reports the server's share (srv-*:
// the chunk to its frame arriving in the reader's socket, from the kernel's
// receive stamp), the reader's (rd-*: arrival to decoded), and how long
// goroutines waited, runnable, for a core (sched-*: the runtime's histogram,
// every goroutine of the process). The server's share splits again by chunk:
// first-* is the chunk to its first frame arriving on any connection (the
// lane, its commit, the hub), fan-* the first to the last connection's (the
// writes of the fan-out). cpu-µs/chunk is the process's CPU time (server and
// readers) per chunk sent: unlike the wall times it hardly moves with the
// machine's load, so an A/B run under load still compares the work done.
func BenchmarkEventLatency(b *testing.B) {
	for _, conns := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("conns=%d", conns), func(b *testing.B) {
			// 1000 sockets are above the default limits.max_sockets (512).
			d := benchDaemon(b, stampDriver{}, func(c *config.Config) { c.Limits.MaxSockets = 2 * conns })
			readers := make([]*client.Conn, conns)
			arrivals := make([]*arrivalConn, conns)
			for i := range readers {
				readers[i] = dialReadyWith(b, d, "lat", arrivalClient(func(c *arrivalConn) { arrivals[i] = c }))
			}
			// The first message makes the thread and attaches the route.
			sendAndWait(b, readers[0], "warm", "1 0s")
			for _, r := range readers[1:] {
				drainTurn(b, r)
			}
			const chunks = 200
			var lt latencies
			sched0 := schedLatency()
			cpu0 := cpuTime()
			b.ResetTimer()
			for n := 0; n < b.N; n++ {
				pace := "2ms"
				if conns >= 1000 {
					pace = "20ms"
				}
				err := lt.round(readers, arrivals, chunks, func() error {
					return readers[0].Send(context.Background(), msgJSON(fmt.Sprintf("l%d", n), fmt.Sprintf("%d %s", chunks, pace)))
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			cpu := cpuTime() - cpu0
			sched1 := schedLatency()
			lt.report(b)
			b.ReportMetric(float64(cpu.Microseconds())/float64(chunks*b.N), "cpu-µs/chunk")
			b.ReportMetric(float64(schedPercentile(sched0, sched1, 0.99).Microseconds())/1000, "sched-p99-ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkThroughput: events per second through one thread to 10 readers, the
// agent emitting as fast as it can, every event stored in SQLite first.
func BenchmarkThroughput(b *testing.B) {
	d := benchDaemon(b, stampDriver{}, func(c *config.Config) { c.Limits.ConnBuffer = 1 << 16 })
	readers := make([]*client.Conn, 10)
	for i := range readers {
		readers[i] = dialReady(b, d, "tp")
	}
	sendAndWait(b, readers[0], "warm", "1 0s")
	for _, r := range readers[1:] {
		drainTurn(b, r)
	}
	const events = 50000
	b.ResetTimer()
	var total time.Duration
	cpu0 := cpuTime()
	for n := 0; n < b.N; n++ {
		start := time.Now()
		var wg sync.WaitGroup
		for _, r := range readers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for got := 0; got < events; {
					raw, err := r.NextRaw(context.Background())
					if err != nil {
						b.Error(err)
						return
					}
					if bytes.HasPrefix(raw, chunkPrefix) {
						got++
					}
				}
			}()
		}
		readers[0].Send(context.Background(), msgJSON(fmt.Sprintf("t%d", n), fmt.Sprintf("%d 0s", events)))
		wg.Wait()
		total += time.Since(start)
	}
	b.StopTimer()
	b.ReportMetric(float64(events*b.N)/total.Seconds(), "events/s")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(events*b.N), "cpu-µs/event")
}

// cpuTime is the CPU time (user and system) the process has used so far: the
// server's and, in these benchmarks, the readers'. Unlike the wall time it
// hardly changes with what else the machine runs, so an A/B run under load
// still compares the work done.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkReplay10k: a new connection asking for the whole of a 10,000-event
// thread, from dial to replay_done.
func BenchmarkReplay10k(b *testing.B) {
	d := benchDaemon(b, stampDriver{}, func(c *config.Config) { c.Limits.ReplayTail = 20000; c.Limits.ConnBuffer = 1 << 16 })
	c := dialReady(b, d, "replay")
	sendAndWait(b, c, "fill", "10000 0s")
	b.ResetTimer()
	cpu0 := cpuTime()
	for n := 0; n < b.N; n++ {
		ctx := context.Background()
		r, _, err := client.Dial(ctx, "http://"+d.Addr(), d.Token(), client.Options{Chat: "replay", Since: 0})
		if err != nil {
			b.Fatal(err)
		}
		events := 0
		for {
			raw, err := r.NextRaw(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if bytes.Contains(raw[:min(len(raw), 64)], []byte(`"seq":`)) {
				events++
			}
			if bytes.HasPrefix(raw, replayDonePrefix) {
				break
			}
		}
		if events < 10000 {
			b.Fatalf("replayed %d events, want ≥ 10000", events)
		}
		r.CloseNow()
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// BenchmarkIdleConnectionMemory: the daemon's resident memory per idle socket with
// 10,000 sockets open, measured in a child process (its RSS before and after), so
// the client side does not count.
func BenchmarkIdleConnectionMemory(b *testing.B) {
	const conns = 10000
	var rss, heap []float64
	for n := 0; n < b.N; n++ {
		// A fresh daemon each time: memory a process once held is not given back,
		// so a second measurement in the same process would read nothing.
		url, token, pid, stop := startBenchChild(b)
		before := rssKiB(b, pid)
		heapBefore := goMemory(b, url, token)
		open := make([]*client.Conn, 0, conns)
		for i := 0; i < conns; i++ {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			c, _, err := client.Dial(ctx, url, token, client.Options{Chat: "idle-" + strconv.Itoa(i%100), Since: -1})
			cancel()
			if err != nil {
				b.Fatalf("connection %d: %v", i, err)
			}
			open = append(open, c)
		}
		time.Sleep(2 * time.Second) // let the server settle its buffers before reading RSS
		rss = append(rss, float64(rssKiB(b, pid)-before)/conns)
		heap = append(heap, (goMemory(b, url, token)-heapBefore)/1024/conns)
		for _, c := range open {
			c.CloseNow()
		}
		stop()
	}
	slices.Sort(rss)
	slices.Sort(heap)
	b.ReportMetric(rss[len(rss)/2], "RSS-KiB/conn")
	b.ReportMetric(heap[len(heap)/2], "heap+stack-KiB/conn")
}

// startBenchChild starts the test binary as a daemon child process.
func startBenchChild(b *testing.B) (url, token string, pid int, stop func()) {
	root, _ := filepath.EvalSymlinks(b.TempDir())
	work := filepath.Join(root, "work")
	os.MkdirAll(work, 0o755)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PARLEY_TEST_CHILD_DATA="+filepath.Join(root, "data"), "PARLEY_TEST_CHILD_WORK="+work)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(line)
	return "http://" + f[1], f[2], cmd.Process.Pid, func() { cmd.Process.Kill(); cmd.Wait() }
}

// goMemory reads the daemon's Go heap and stack in use from its /metrics.
func goMemory(b *testing.B, url, token string) float64 {
	req, _ := http.NewRequest("GET", url+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var total float64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && (f[0] == "go_memstats_heap_inuse_bytes" || f[0] == "go_memstats_stack_inuse_bytes") {
			v, _ := strconv.ParseFloat(f[1], 64)
			total += v
		}
	}
	return total
}

func rssKiB(b *testing.B, pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			n, _ := strconv.ParseInt(strings.Fields(l)[1], 10, 64)
			return n
		}
	}
	b.Fatal("no VmRSS")
	return 0
}

var (
	chunkPrefix      = []byte(`{"type":"agent_chunk"`)
	replayDonePrefix = []byte(`{"type":"replay_done"`)
)

func msgJSON(id, text string) string {
	return fmt.Sprintf(`{"type":"message","message_id":%q,"text":%q}`, id, text)
}

func sendAndWait(b *testing.B, c *client.Conn, id, text string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := c.Send(ctx, msgJSON(id, text)); err != nil {
		b.Fatal(err)
	}
	drainTurn(b, c)
}

// drainTurn reads until the end of the current turn.
func drainTurn(b *testing.B, c *client.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		ev, err := c.Next(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if ev.Type == chat.TypePromptDone {
			return
		}
	}
}
