package cluster

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/follow"
)

// go test -run '^$' -bench 'FanOut|HubMemory' -benchtime 1x ./internal/cluster/ (docs/benchmarks.md)

// BenchmarkFanOut100 is events/s from one node's thread to 100 connections
// (route followers) at the hub, beside the same thread to 100 followers on
// the node itself, in one run: each iteration commits and publishes 1,000
// events on the node and ends when every follower has handed on the last.
func BenchmarkFanOut100(b *testing.B) {
	const viewers, batch = 100, 1000
	lk := newLinked(b)
	const th = chat.ThreadID("t_fan")
	lk.node.write(th, 1, true)
	for _, c := range []struct {
		name string
		d    follow.Deps
	}{
		{"at-the-hub", follow.Deps{Source: lk.h.Source(), Router: oneRoute{lk.local, RemoteID("b", th)}, Hub: lk.local}},
		{"on-the-node", follow.Deps{Source: lk.node.st, Router: oneRoute{lk.node.hub, th}, Hub: lk.node.hub}},
	} {
		b.Run(c.name, func(b *testing.B) {
			ctx, cancel := context.WithCancel(b.Context())
			defer cancel()
			seen := make([]chan int64, viewers) // each follower's last seq handed on
			var wg sync.WaitGroup
			for i := range viewers {
				route := chat.RouteKey{Channel: "web", Chat: fmt.Sprintf("v%d", i)}
				f, start, err := follow.Subscribe(ctx, c.d, route, follow.Options{Buffer: 1 << 16})
				if err != nil {
					b.Fatal(err)
				}
				if err := f.Start(ctx, start, -1, "", func(follow.Item) error { return nil }); err != nil {
					b.Fatal(err)
				}
				seen[i] = make(chan int64, 1)
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer f.Close()
					for {
						select {
						case <-ctx.Done():
							return
						case <-f.Sub().Done():
							b.Errorf("viewer %d dropped: %s", i, f.Dropped())
							return
						case <-f.Sub().Ready():
						}
						if _, err := f.Live(ctx, func(follow.Item) error { return nil }); err != nil {
							return
						}
						select {
						case <-seen[i]:
						default:
						}
						seen[i] <- f.LastSeq()
					}
				}()
			}
			start := time.Now()
			for b.Loop() {
				lk.node.write(th, batch, false)
				last := lk.node.ths[th].LastSeq
				for i := range viewers {
					for s := int64(0); s < last; {
						select {
						case s = <-seen[i]:
						case <-time.After(time.Minute):
							b.Fatalf("viewer %d stuck at seq %d of %d", i, s, last)
						}
					}
				}
			}
			el := time.Since(start)
			b.ReportMetric(float64(b.N*batch)/el.Seconds(), "events/s")
			b.ReportMetric(float64(b.N*batch*viewers)/el.Seconds(), "deliveries/s")
			cancel()
			wg.Wait()
		})
	}
}

// nodesEnv makes the test binary a process of linked nodes for
// BenchmarkHubMemory (TestBenchNodesProcess), so the hub's heap holds only
// the hub's side: "<hub addr>|<threads of the first node>|<data dir>,…".
const nodesEnv = "PARLEY_BENCH_NODES"

// TestBenchNodesProcess is not a test: run by BenchmarkHubMemory as its own
// process, it links each joined node's data directory to the hub, gives the
// first node its threads, says "ready" and holds until its stdin closes.
func TestBenchNodesProcess(t *testing.T) {
	spec := os.Getenv(nodesEnv)
	if spec == "" {
		t.Skip("the nodes' process of BenchmarkHubMemory")
	}
	parts := strings.SplitN(spec, "|", 3)
	threads, _ := strconv.Atoi(parts[1])
	for i, data := range strings.Split(parts[2], ",") {
		m := newMachine(t)
		if i == 0 {
			for k := range threads {
				m.write(chat.ThreadID(fmt.Sprintf("t%d", k)), 20, true)
			}
		}
		l, err := Dial(LinkOptions{DataDir: data, Hub: parts[0], Node: fmt.Sprintf("n%d", i), Heartbeat: time.Minute,
			Store: m.st, Events: m.hub, Inputs: func(context.Context, string, []byte) ([]byte, error) { return nil, nil }})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
	}
	fmt.Println("ready")
	bufio.NewReader(os.Stdin).ReadString('\n')
}

// heap is the live heap after two collections (runtime.MemStats.HeapAlloc).
func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkHubMemory is the hub's heap per linked node and per remote
// thread a route follower shows: nodes nodes join and link from another
// process (their own heap is not the hub's), then threads followers at the
// hub each show one of the first node's threads. Measured once, whatever
// the benchtime.
func BenchmarkHubMemory(b *testing.B) {
	const nodes, threads = 20, 200
	for i := 0; b.Loop(); i++ {
		if i > 0 {
			continue
		}
		h, err := StartHub(b.Context(), HubOptions{DataDir: b.TempDir(), Listen: "127.0.0.1:0"})
		if err != nil {
			b.Fatal(err)
		}
		local := newMachine(b).hub
		stop, err := h.Relay(local.Publish)
		if err != nil {
			b.Fatal(err)
		}
		var dirs []string
		for i := range nodes {
			d := b.TempDir()
			tok, _ := IssueToken(h.opt.DataDir, h.Addr(), "", time.Now().Add(time.Minute))
			if _, err := Join(b.Context(), d, tok, fmt.Sprintf("n%d", i), "bench"); err != nil {
				b.Fatal(err)
			}
			dirs = append(dirs, d)
		}
		before := heap()
		cmd := exec.Command(os.Args[0], "-test.run=^TestBenchNodesProcess$")
		cmd.Env = append(os.Environ(), nodesEnv+"="+h.Addr()+"|"+strconv.Itoa(threads)+"|"+strings.Join(dirs, ","))
		cmd.Stderr = os.Stderr
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
			b.Fatalf("the nodes' process: %q %v", line, err)
		}
		deadline := time.Now().Add(time.Minute)
		for {
			ns, err := h.Nodes(b.Context())
			on := 0
			for _, n := range ns {
				if n.Online {
					on++
				}
			}
			rts, _ := h.Threads(b.Context())
			if err == nil && on == nodes && len(rts) == threads {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("%d of %d nodes online, %d of %d threads listed", on, nodes, len(rts), threads)
			}
			time.Sleep(50 * time.Millisecond)
		}
		linked := heap()
		var fs []*follow.Follower
		for k := range threads {
			id := RemoteID("n0", chat.ThreadID(fmt.Sprintf("t%d", k)))
			d := follow.Deps{Source: h.Source(), Router: oneRoute{local, id}, Hub: local}
			f, start, err := follow.Subscribe(b.Context(), d, chat.RouteKey{Channel: "web", Chat: string(id)}, follow.Options{Buffer: 256})
			if err != nil {
				b.Fatal(err)
			}
			if err := f.Start(b.Context(), start, -1, "", func(follow.Item) error { return nil }); err != nil {
				b.Fatal(err)
			}
			fs = append(fs, f)
		}
		watched := heap()
		b.ReportMetric(float64(int64(linked)-int64(before))/nodes, "hub-B/node")
		b.ReportMetric(float64(int64(watched)-int64(linked))/threads, "hub-B/watched-thread")
		for _, f := range fs {
			f.Close()
		}
		in.Close()
		cmd.Wait()
		stop()
		h.Close()
	}
}
