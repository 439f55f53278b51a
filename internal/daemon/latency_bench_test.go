package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
)

// latencies gathers what BenchmarkEventLatency's readers measure, round by
// round, wherever the readers run (this process, or a child: readers.go).
type latencies struct {
	Lat, Srv, Rd []time.Duration
	// Arrived maps a chunk's stamp to its first and last arrival (UnixNano)
	// on any connection.
	Arrived map[int64][2]int64
}

// round has every reader read chunks agent_chunk frames, each decoded once as
// a client does, while send starts the turn that streams them.
func (lt *latencies) round(readers []*client.Conn, arrivals []*arrivalConn, chunks int, send func() error) error {
	if lt.Arrived == nil {
		lt.Arrived = map[int64][2]int64{}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, len(readers)+1)
	for i, r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := make([]time.Duration, 0, chunks)
			mySrv := make([]time.Duration, 0, chunks)
			myRd := make([]time.Duration, 0, chunks)
			myAt := make([][2]int64, 0, chunks) // stamp, arrival
			for len(mine) < chunks {
				raw, err := r.NextRaw(context.Background())
				if err != nil {
					errs <- err
					return
				}
				if !bytes.HasPrefix(raw, chunkPrefix) {
					continue
				}
				var c chat.AgentChunk
				if err := json.Unmarshal(raw, &c); err != nil {
					errs <- err
					return
				}
				now := time.Now()
				ns, _ := strconv.ParseInt(c.Text, 10, 64)
				mine = append(mine, now.Sub(time.Unix(0, ns)))
				if a := arrivals[i]; a != nil && a.last != 0 {
					at := a.last
					mySrv = append(mySrv, time.Duration(at-ns))
					myRd = append(myRd, now.Sub(time.Unix(0, at)))
					myAt = append(myAt, [2]int64{ns, at})
				}
			}
			mu.Lock()
			lt.Lat = append(lt.Lat, mine...)
			lt.Srv = append(lt.Srv, mySrv...)
			lt.Rd = append(lt.Rd, myRd...)
			for _, a := range myAt {
				fl, ok := lt.Arrived[a[0]]
				if !ok {
					fl = [2]int64{a[1], a[1]}
				}
				fl[0], fl[1] = min(fl[0], a[1]), max(fl[1], a[1])
				lt.Arrived[a[0]] = fl
			}
			mu.Unlock()
		}()
	}
	if err := send(); err != nil {
		errs <- err
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// report reports the p50 and p99 of each share (BenchmarkEventLatency says
// what each is).
func (lt *latencies) report(b *testing.B) {
	report := func(d []time.Duration, prefix string) {
		slices.Sort(d)
		b.ReportMetric(float64(percentile(d, 0.50).Microseconds())/1000, prefix+"p50-ms")
		b.ReportMetric(float64(percentile(d, 0.99).Microseconds())/1000, prefix+"p99-ms")
	}
	report(lt.Lat, "")
	report(lt.Srv, "srv-")
	report(lt.Rd, "rd-")
	var first, fan []time.Duration
	for ns, fl := range lt.Arrived {
		first = append(first, time.Duration(fl[0]-ns))
		fan = append(fan, time.Duration(fl[1]-fl[0]))
	}
	report(first, "first-")
	report(fan, "fan-")
}
