package router

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the router's Prometheus collectors.
type Metrics struct {
	Threads    prometheus.Counter
	Events     prometheus.Counter
	QueueDepth prometheus.Gauge
	// LiveSessions counts threads whose agent is loaded (a process or pane).
	LiveSessions prometheus.Gauge
	Receipts     *prometheus.CounterVec
}

// NewMetrics makes the collectors and registers them on reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Threads: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_threads_created_total", Help: "Threads created.",
		}),
		Events: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_events_total", Help: "Events written to thread logs (rate() gives events per second).",
		}),
		QueueDepth: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "parley_queued_inputs", Help: "Messages accepted and waiting for their turn, over all threads.",
		}),
		LiveSessions: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "parley_live_sessions", Help: "Threads whose agent session is loaded now (idle unload and exits lower it).",
		}),
		Receipts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_receipts_total", Help: "Delivery receipts by state.",
		}, []string{"state"}),
	}
	for _, st := range []string{"queued", "delivering", "submitted", "failed"} {
		m.Receipts.WithLabelValues(st) // shown at zero from the start
	}
	if reg != nil {
		reg.MustRegister(m.Threads, m.Events, m.QueueDepth, m.LiveSessions, m.Receipts)
	}
	return m
}
