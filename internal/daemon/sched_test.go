package daemon_test

import (
	"runtime/metrics"
	"time"
)

// schedLatency reads the runtime's histogram of how long goroutines waited,
// runnable, for a core.
func schedLatency() *metrics.Float64Histogram {
	s := []metrics.Sample{{Name: "/sched/latencies:seconds"}}
	metrics.Read(s)
	return s[0].Value.Float64Histogram()
}

// schedPercentile is the p-th percentile of the waits counted in after but
// not in before (the buckets' upper bounds).
func schedPercentile(before, after *metrics.Float64Histogram, p float64) time.Duration {
	var total uint64
	for i := range after.Counts {
		total += after.Counts[i] - before.Counts[i]
	}
	if total == 0 {
		return 0
	}
	want := uint64(p * float64(total))
	var seen uint64
	for i := range after.Counts {
		seen += after.Counts[i] - before.Counts[i]
		if seen > want {
			return time.Duration(after.Buckets[i+1] * 1e9)
		}
	}
	return 0
}
