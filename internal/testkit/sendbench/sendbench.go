// Package sendbench is what the tmux send benchmarks share (the driver's own
// and the whole way from the socket): the cases a send must survive, and the
// report of latencies, false "submitted" and failures.
package sendbench

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// Case is one way of sending many messages.
type Case struct {
	Name   string
	Text   func(i int) string // the i-th message
	Staged string             // typed into the box by hand before each send
}

// Cases: new text each time, text left in the box before each send, and the
// same short answer over and over (where novelty checks are tested hardest).
var Cases = []Case{
	{Name: "clean", Text: func(i int) string { return fmt.Sprintf("bench message %d", i) }},
	{Name: "staged-text", Text: func(i int) string { return fmt.Sprintf("bench message %d", i) }, Staged: "left in the box"},
	{Name: "repeated-yes", Text: func(int) string { return "yes" }},
}

// Report reports the latencies' p50 and p99 (ms) and the counts as metrics,
// and logs the spread.
func Report(b *testing.B, name string, lat []time.Duration, falseSubmitted, failed int) {
	b.Helper()
	slices.Sort(lat)
	if len(lat) > 0 {
		b.ReportMetric(float64(at(lat, 50).Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(at(lat, 99).Microseconds())/1000, "p99-ms")
	}
	b.ReportMetric(float64(falseSubmitted), "false-submitted")
	b.ReportMetric(float64(failed), "failed")
	b.Logf("%s: %d sends, latencies %s", name, b.N, spread(lat))
}

func at(sorted []time.Duration, q int) time.Duration {
	return sorted[min(len(sorted)-1, len(sorted)*q/100)]
}

func spread(sorted []time.Duration) string {
	if len(sorted) == 0 {
		return "none"
	}
	var parts []string
	for _, q := range []int{0, 50, 90, 99, 100} {
		parts = append(parts, fmt.Sprintf("p%d=%v", q, at(sorted, q).Round(time.Millisecond)))
	}
	return strings.Join(parts, " ")
}
