package cluster

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/fanout"
	"github.com/parleyhq/parley/internal/follow"
)

// go test -run '^$' -bench 'CatchUp|Live|Input' -benchtime 5x ./internal/cluster/ (docs/benchmarks.md)

// linked is a hub and one node "b" with a store and a local hub each, the
// node's link serving its threads, the hub relaying into its own hub.
type linked struct {
	h     *Hub
	node  *machine
	local *fanout.Fanout // the hub's
}

func newLinked(b *testing.B) *linked {
	b.Helper()
	h, err := StartHub(b.Context(), HubOptions{DataDir: b.TempDir(), Listen: "127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(h.Close)
	data := b.TempDir()
	tok, _ := IssueToken(h.opt.DataDir, h.Addr(), "", time.Now().Add(time.Minute))
	if _, err := Join(b.Context(), data, tok, "b", "bench"); err != nil {
		b.Fatal(err)
	}
	m := newMachine(b)
	l, err := Dial(LinkOptions{DataDir: data, Hub: h.Addr(), Node: "b", Heartbeat: time.Hour, Store: m.st, Events: m.hub,
		Inputs: func(context.Context, string, []byte) ([]byte, error) { return nil, nil }})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(l.Close)
	for !l.Connected() {
		time.Sleep(time.Millisecond)
	}
	local := fanout.New(nil)
	stop, err := h.Relay(local.Publish)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(stop)
	return &linked{h: h, node: m, local: local}
}

type oneRoute struct {
	h  *fanout.Fanout
	id chat.ThreadID
}

func (r oneRoute) Subscribe(_ context.Context, route chat.RouteKey, buffer int) (*fanout.Sub, *chat.Thread, error) {
	return r.h.Subscribe(route, r.id, buffer), &chat.Thread{ID: r.id}, nil
}

var benchRoute = chat.RouteKey{Channel: "web", Chat: "bench"}

// BenchmarkCatchUp10000 shows a thread of 10,000 events from seq 0 through
// the route follower: at the hub from the node's store across the link, and
// on the node from its own store, in one run.
func BenchmarkCatchUp10000(b *testing.B) {
	lk := newLinked(b)
	const th = chat.ThreadID("t_big")
	for range 10 {
		lk.node.write(th, 1000, true)
	}
	for _, c := range []struct {
		name string
		d    follow.Deps
	}{
		{"across-the-link", follow.Deps{Source: lk.h.Source(), Router: oneRoute{lk.local, RemoteID("b", th)}, Hub: lk.local}},
		{"local", follow.Deps{Source: lk.node.st, Router: oneRoute{lk.node.hub, th}, Hub: lk.node.hub}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				f, start, err := follow.Subscribe(b.Context(), c.d, benchRoute, follow.Options{Buffer: 256})
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
				if n != 10_000 {
					b.Fatalf("caught up %d events", n)
				}
			}
		})
	}
}

// BenchmarkLiveEvent is one event from the node's lane (its local hub's
// publish, after the commit) to a follower at the hub, one at a time, beside
// the same event to a follower on the node: p50 and p99 of each.
func BenchmarkLiveEvent(b *testing.B) {
	lk := newLinked(b)
	const th = chat.ThreadID("t_live")
	lk.node.write(th, 1, true)
	for _, c := range []struct {
		name string
		d    follow.Deps
	}{
		{"at-the-hub", follow.Deps{Source: lk.h.Source(), Router: oneRoute{lk.local, RemoteID("b", th)}, Hub: lk.local}},
		{"on-the-node", follow.Deps{Source: lk.node.st, Router: oneRoute{lk.node.hub, th}, Hub: lk.node.hub}},
	} {
		b.Run(c.name, func(b *testing.B) {
			f, start, err := follow.Subscribe(b.Context(), c.d, benchRoute, follow.Options{Buffer: 1 << 16})
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			if err := f.Start(b.Context(), start, -1, "", func(follow.Item) error { return nil }); err != nil {
				b.Fatal(err)
			}
			var lat []time.Duration
			for b.Loop() {
				t0 := time.Now()
				lk.node.write(th, 1, false)
				for got := false; !got; {
					<-f.Sub().Ready()
					if _, err := f.Live(b.Context(), func(it follow.Item) error {
						got = got || it.Kind == follow.KindEvent
						return nil
					}); err != nil {
						b.Fatal(err)
					}
				}
				lat = append(lat, time.Since(t0))
			}
			report(b, lat)
		})
	}
}

// BenchmarkInput is one input from the hub to the node's handler and its
// answer back (Hub.Request: the JetStream store at the hub, the hand-over,
// the ack), one at a time.
func BenchmarkInput(b *testing.B) {
	lk := newLinked(b)
	var lat []time.Duration
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		if _, err := lk.h.Request(b.Context(), "b", "t1", fmt.Sprintf("m%d", i), []byte(`{}`), 10*time.Second); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	report(b, lat)
}

func report(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
