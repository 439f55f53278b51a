package schedule

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/fanout"
	"github.com/parleyhq/parley/internal/router"
	"github.com/parleyhq/parley/internal/store/sqlite"
	"github.com/parleyhq/parley/internal/testkit/scripted"
)

// BenchmarkDueToStart measures, on the real clock, how long after its due
// time a run is in the router's hands (stored and queued for its agent):
// each iteration adds 100 schedules due within one second, 20 of them at
// the same instant, over a real router, SQLite and the scripted agent.
// docs/benchmarks.md quotes p50, p99 and max.
func BenchmarkDueToStart(b *testing.B) {
	dir := b.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "parley.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	rt := router.New(st, fanout.New(nil), router.Options{
		Agents:       []config.Agent{{ID: "echo", Transport: "scripted", Command: "scripted", Roots: []string{dir}}},
		DefaultAgent: "echo",
		Drivers:      map[string]driver.Driver{"scripted": &scripted.Driver{}},
		MaxSessions:  200, ThreadsPerMinute: 100000,
	})
	if err := rt.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer rt.Close(context.Background())
	var mu sync.Mutex
	var lates []time.Duration
	ran := make(chan struct{}, 100)
	run, err := Start(context.Background(), Options{Store: st, Send: rt, Ran: func(_ string, _ time.Time, late time.Duration) {
		mu.Lock()
		lates = append(lates, late)
		mu.Unlock()
		ran <- struct{}{}
	}})
	if err != nil {
		b.Fatal(err)
	}
	defer run.Close()
	b.ResetTimer()
	for range b.N {
		base := time.Now().Add(500 * time.Millisecond)
		for i := range 100 {
			at := base.Add(time.Duration(i%5) * 200 * time.Millisecond) // 5 instants, 20 each
			sp := Spec{Agent: "echo", Cwd: dir, Text: "say hi", At: at.Format(time.RFC3339Nano), NewEach: i%2 == 0}
			if _, err := run.Add(context.Background(), sp); err != nil {
				b.Fatal(err)
			}
		}
		for range 100 {
			<-ran
		}
		all, _ := run.List(context.Background())
		for _, s := range all { // ran: room for the next iteration's (MaxSchedules)
			run.Remove(context.Background(), s.ID)
		}
	}
	b.StopTimer()
	slices.Sort(lates)
	q := func(p float64) float64 { return float64(lates[int(p*float64(len(lates)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(q(1), "max-ms")
	b.ReportMetric(0, "ns/op")
}
