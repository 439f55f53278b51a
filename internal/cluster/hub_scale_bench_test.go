package cluster

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
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/follow"
	"github.com/parleyhq/parley/internal/push"
)

// go test -run '^$' -bench HubAtScale -benchtime 1x ./internal/cluster/ (docs/benchmarks.md)

// scaleEnv makes the test binary the nodes of BenchmarkHubAtScale
// (TestBenchScaleProcess): "<hub addr>|<threads per node>|<data dir>,…".
const scaleEnv = "PARLEY_BENCH_SCALE"

// TestBenchScaleProcess is not a test: run by BenchmarkHubAtScale as its own
// process (so the hub's heap and CPU are the hub's alone), it gives each
// joined node its threads, links them, says "ready", then does what each
// line of its stdin says and answers "ok":
//
//	relink     every node's link closed and dialled again (its parley restarted), nothing changed
//	change K   one event on each of K threads (node j%nodes, thread j/nodes): K summaries change
//	live       one agent chunk on n0's thread t_live, published (its TS is when it was written)
//	flood N    N chunks on n0's t_live in one commit, published
//	burst N    N chunks on n0's t_big, not published: events the hub never heard live
func TestBenchScaleProcess(t *testing.T) {
	spec := os.Getenv(scaleEnv)
	if spec == "" {
		t.Skip("the nodes' process of BenchmarkHubAtScale")
	}
	parts := strings.SplitN(spec, "|", 3)
	threads, _ := strconv.Atoi(parts[1])
	var ms []*machine
	dirs := strings.Split(parts[2], ",")
	links := make([]*Link, len(dirs))
	dial := func(i int) {
		l, err := Dial(LinkOptions{DataDir: dirs[i], Hub: parts[0], Node: fmt.Sprintf("n%d", i), Heartbeat: time.Minute,
			Store: ms[i].st, Events: ms[i].hub, Inputs: func(context.Context, string, []byte) ([]byte, error) { return nil, nil }})
		if err != nil {
			t.Fatal(err)
		}
		links[i] = l
	}
	defer func() {
		for _, l := range links {
			l.Close()
		}
	}()
	for i := range dirs {
		m := newMachine(t)
		for k := range threads {
			m.write(chat.ThreadID(fmt.Sprintf("t%d", k)), 3, true)
		}
		if i == 0 {
			m.write("t_live", 1, true)
		}
		ms = append(ms, m)
		dial(i)
	}
	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		cmd, arg, _ := strings.Cut(in.Text(), " ")
		n, _ := strconv.Atoi(arg)
		switch cmd {
		case "change":
			for j := range n {
				ms[j%len(ms)].write(chat.ThreadID(fmt.Sprintf("t%d", j/len(ms))), 1, false)
			}
		case "relink": // each node's parley restarts: a new link, nothing changed
			for i, l := range links {
				l.Close()
				dial(i)
			}
		case "live":
			ms[0].write("t_live", 1, false)
		case "flood":
			ms[0].write("t_live", n, false)
		case "burst":
			for n > 0 {
				k := min(n, 1000)
				ms[0].write("t_big", k, true)
				n -= k
			}
		}
		fmt.Println("ok")
	}
}

// scaleNodes is the nodes' process as the benchmark drives it.
type scaleNodes struct {
	b   *testing.B
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func (p *scaleNodes) do(line string) {
	p.b.Helper()
	fmt.Fprintln(p.in, line)
	if got, err := p.out.ReadString('\n'); err != nil || got != "ok\n" {
		p.b.Fatalf("the nodes' process after %q: %q %v", line, got, err)
	}
}

// cpu is this process's user and system CPU time so far.
func cpu() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rss is this process's resident set (VmRSS), in bytes.
func rss() int64 {
	b, _ := os.ReadFile("/proc/self/status")
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// scalePush is the hub's push service reading the nodes' summaries, as the
// daemon wires it (internal/remote's hubCards, which this package cannot
// import): what each summary change costs the hub includes its look.
type scalePush struct {
	h *Hub
	w *ThreadWatch
}

func (p scalePush) Owns(id chat.ThreadID) bool    { return NodeOf(id) != "" }
func (p scalePush) Ready() <-chan struct{}        { return p.w.Ready() }
func (p scalePush) Take() ([]chat.ThreadID, bool) { return p.w.Take() }
func (p scalePush) Thread(id chat.ThreadID) (push.RemoteThread, bool) {
	rt, ok := p.h.Thread(id)
	return pushThread(rt), ok
}
func (p scalePush) Threads() []push.RemoteThread {
	ths, _ := p.h.Threads(context.Background())
	out := make([]push.RemoteThread, 0, len(ths))
	for _, rt := range ths {
		out = append(out, pushThread(rt))
	}
	return out
}

func pushThread(rt RemoteThread) push.RemoteThread {
	return push.RemoteThread{Thread: rt.Thread, Turn: rt.Turn, Error: rt.Error, Notices: rt.Notices}
}

// BenchmarkHubAtScale is a hub with 10 nodes of 1,000 threads each, the
// nodes in another process linked over TLS on loopback: the link-up of
// every summary, the hub's heap and RSS, its CPU per summary change (the
// push service reading them), one live event to 100 viewers at the hub,
// events/s to them, a follower's catch-up of 10,000 events the hub never
// heard, and every node's parley restarting with nothing changed (all its
// summaries told again). Measured once, whatever the benchtime.
func BenchmarkHubAtScale(b *testing.B) {
	const nodes, threads, viewers, changes, lives = 10, 1000, 100, 500, 300
	for i := 0; b.Loop(); i++ {
		if i > 0 {
			continue
		}
		h, err := StartHub(b.Context(), HubOptions{DataDir: b.TempDir(), Listen: "127.0.0.1:0"})
		if err != nil {
			b.Fatal(err)
		}
		defer h.Close()
		own := newMachine(b) // the hub's own store and hub
		local := own.hub
		stop, err := h.Relay(local.Publish)
		if err != nil {
			b.Fatal(err)
		}
		defer stop()
		var dirs []string
		for i := range nodes {
			d := b.TempDir()
			tok, _ := IssueToken(h.opt.DataDir, h.Addr(), "", time.Now().Add(time.Minute))
			if _, err := Join(b.Context(), d, tok, fmt.Sprintf("n%d", i), "bench"); err != nil {
				b.Fatal(err)
			}
			dirs = append(dirs, d)
		}
		ps, err := push.Start(push.Options{DataDir: b.TempDir(), Store: own.st, Watch: local.WatchTypes(push.Types...), Remote: scalePush{h, h.WatchThreads()}, Machine: "hub"})
		if err != nil {
			b.Fatal(err)
		}
		defer ps.Close()
		heap0, rss0 := heap(), rss()
		cmd := exec.Command(os.Args[0], "-test.run=^TestBenchScaleProcess$")
		cmd.Env = append(os.Environ(), scaleEnv+"="+h.Addr()+"|"+strconv.Itoa(threads)+"|"+strings.Join(dirs, ","))
		cmd.Stderr = os.Stderr
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		p := &scaleNodes{b: b, cmd: cmd, in: in, out: bufio.NewReader(out)}
		defer func() { in.Close(); cmd.Wait() }()
		if line, err := p.out.ReadString('\n'); err != nil || line != "ready\n" {
			b.Fatalf("the nodes' process: %q %v", line, err)
		}
		// The nodes linked as their process said ready; their summaries
		// are on their way.
		t0, c0 := time.Now(), cpu()
		want := nodes*threads + 1
		for deadline := time.Now().Add(10 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
			n := 0
			h.summaries.each(func(string, held[RemoteThread]) { n++ })
			if n == want {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("%d of %d threads listed", n, want)
			}
		}
		b.ReportMetric(float64(time.Since(t0).Milliseconds()), "linkup-ms")
		b.ReportMetric(float64((cpu() - c0).Milliseconds()), "linkup-hub-cpu-ms")
		heap1, rss1 := heap(), rss()
		b.ReportMetric(float64(rss1)/(1<<20), "hub-rss-MiB")
		b.ReportMetric(float64(int64(heap1)-int64(heap0))/(1<<20), "hub-heap-MiB")
		b.ReportMetric(float64(int64(heap1)-int64(heap0))/nodes/threads, "hub-heap-B/thread")
		b.ReportMetric(float64(rss1-rss0)/nodes/threads, "hub-rss-B/thread")

		// CPU per summary change: the hub's whole process (the writes, the
		// directory's copy, the push service's look) while the nodes change
		// changes threads, minus the same time idle.
		settle := func() { time.Sleep(time.Second) } // the push service's look after the last write
		ci := cpu()
		settle()
		idle := cpu() - ci
		// The threads the nodes' process changes, and their seq before.
		keys := map[string]int64{}
		for j := range changes {
			k := ThreadKey(fmt.Sprintf("n%d", j%nodes), chat.ThreadID(fmt.Sprintf("t%d", j/nodes)))
			v, _ := h.summaries.get(k)
			keys[k] = v.val.Thread.LastSeq
		}
		c0, t0 = cpu(), time.Now()
		p.do(fmt.Sprintf("change %d", changes))
		for deadline := time.Now().Add(10 * time.Minute); ; time.Sleep(5 * time.Millisecond) {
			n := 0
			for k, seq := range keys {
				if v, _ := h.summaries.get(k); v.val.Thread.LastSeq > seq {
					n++
				}
			}
			if n == changes {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("%d of %d changes listed", n, changes)
			}
		}
		wall := time.Since(t0)
		settle()
		b.ReportMetric(float64((cpu()-c0-idle).Microseconds())/changes, "hub-cpu-µs/change")
		b.ReportMetric(float64(wall.Microseconds())/changes, "wall-µs/change")

		// 100 viewers at the hub of n0's t_live.
		id := RemoteID("n0", "t_live")
		type got struct {
			seq int64
			lat time.Duration
		}
		seen := make(chan got, viewers*64)
		ctx, cancel := context.WithCancel(b.Context())
		var wg sync.WaitGroup
		for v := range viewers {
			d := follow.Deps{Source: h.Source(), Router: oneRoute{local, id}, Hub: local}
			f, start, err := follow.Subscribe(ctx, d, chat.RouteKey{Channel: "web", Chat: fmt.Sprintf("v%d", v)}, follow.Options{Buffer: 1 << 16})
			if err != nil {
				b.Fatal(err)
			}
			if err := f.Start(ctx, start, -1, "", func(follow.Item) error { return nil }); err != nil {
				b.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer f.Close()
				for {
					select {
					case <-ctx.Done():
						return
					case <-f.Sub().Done():
						b.Errorf("viewer %d dropped: %s", v, f.Dropped())
						return
					case <-f.Sub().Ready():
					}
					var last chat.Event
					if _, err := f.Live(ctx, func(it follow.Item) error {
						if it.Kind == follow.KindEvent {
							last = it.Event
						}
						return nil
					}); err != nil {
						return
					}
					if last.Seq > 0 {
						seen <- got{last.Seq, time.Since(last.TS)}
					}
				}
			}()
		}
		awaitAll := func(seq int64) []time.Duration {
			var lats []time.Duration
			at := make([]int64, 0, viewers)
			for len(at) < viewers {
				select {
				case g := <-seen:
					if g.seq >= seq {
						at, lats = append(at, g.seq), append(lats, g.lat)
					}
				case <-time.After(time.Minute):
					b.Fatalf("%d of %d viewers have seq %d", len(at), viewers, seq)
				}
			}
			return lats
		}
		seq := int64(1)
		var each, last []time.Duration
		for range lives {
			seq++
			p.do("live")
			lats := awaitAll(seq)
			slices.Sort(lats)
			each = append(each, lats...)
			last = append(last, lats[len(lats)-1])
		}
		pct := func(l []time.Duration, q int) float64 {
			slices.Sort(l)
			return float64(l[len(l)*q/100].Microseconds())
		}
		b.ReportMetric(pct(each, 50), "live-p50-µs")
		b.ReportMetric(pct(each, 99), "live-p99-µs")
		b.ReportMetric(pct(last, 50), "live-all100-p50-µs")
		const flood = 1000
		t0 = time.Now()
		p.do(fmt.Sprintf("flood %d", flood))
		awaitAll(seq + flood)
		b.ReportMetric(flood/time.Since(t0).Seconds(), "events/s-to-100")
		cancel()
		wg.Wait()

		// A follower's catch-up of 10,000 events n0 wrote while the hub did
		// not hear them (an outage): its whole replay from seq 0.
		p.do("burst 10000")
		big := RemoteID("n0", "t_big")
		d := follow.Deps{Source: h.Source(), Router: oneRoute{local, big}, Hub: local}
		t0 = time.Now()
		f, start, err := follow.Subscribe(b.Context(), d, benchRoute, follow.Options{Buffer: 256})
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		if err := f.Start(b.Context(), start, 0, start.ID, func(it follow.Item) error {
			if it.Kind == follow.KindEvent {
				n++
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		f.Close()
		b.ReportMetric(float64(time.Since(t0).Milliseconds()), "catchup-10000-ms")
		if n != 10_000 {
			b.Fatalf("caught up %d events", n)
		}

		// Every node's parley restarts with nothing changed: each tells all
		// its summaries again, then the list of its threads, which the hub
		// hears once it has answered all of that node's summaries.
		lists := make(chan *nats.Msg, nodes)
		sub, err := h.nc.ChanSubscribe(threadListSubject("*"), lists)
		if err != nil {
			b.Fatal(err)
		}
		c0, t0 = cpu(), time.Now()
		p.do("relink")
		for range nodes {
			select {
			case <-lists:
			case <-time.After(10 * time.Minute):
				b.Fatal("the nodes never listed their threads again")
			}
		}
		b.ReportMetric(float64(time.Since(t0).Milliseconds()), "relink-ms")
		b.ReportMetric(float64((cpu() - c0).Milliseconds()), "relink-hub-cpu-ms")
		sub.Unsubscribe()

	}
}
