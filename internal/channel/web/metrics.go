package web

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/parleyhq/parley/internal/fanout"
)

type metrics struct {
	authFailures prometheus.Counter
	inputs       *prometheus.CounterVec
	closed       *prometheus.CounterVec
	evicted      prometheus.Counter
}

func newMetrics(reg *prometheus.Registry, h *fanout.Fanout) *metrics {
	m := &metrics{
		authFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_auth_failures_total", Help: "Requests refused for a missing or wrong token.",
		}),
		inputs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_socket_inputs_total", Help: "Socket inputs by type and outcome.",
		}, []string{"type", "outcome"}),
		closed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_socket_closed_total", Help: "Sockets closed by parley, by reason.",
		}, []string{"reason"}),
		evicted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_unauthenticated_closed_total", Help: "Connections that had not shown the token, closed for limits.max_unauthenticated.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.authFailures, m.inputs, m.closed, m.evicted,
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "parley_connections", Help: "Live chat socket connections.",
			}, func() float64 { return float64(h.Count()) }))
	}
	return m
}
