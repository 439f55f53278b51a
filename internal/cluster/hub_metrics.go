package cluster

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// hubCollector exports each joined node's link state at scrape time.
type hubCollector struct{ h *Hub }

var (
	nodeOnlineDesc = prometheus.NewDesc("parley_cluster_node_online",
		"1 when the joined node's heartbeat is current, else 0.", []string{"node"}, nil)
	nodeSeenDesc = prometheus.NewDesc("parley_cluster_node_last_seen_timestamp_seconds",
		"When the hub last had the node's heartbeat (0: never).", []string{"node"}, nil)
	nodeWaitingDesc = prometheus.NewDesc("parley_cluster_inputs_waiting",
		"Inputs kept at the hub for the node, not yet taken by it.", []string{"node"}, nil)
	storeBookedDesc = prometheus.NewDesc("parley_cluster_store_booked_bytes",
		"What the hub's JetStream has booked on its disk: the thread summaries' bound, each joined node's input_bytes and each node's copy_bytes.", nil, nil)
	storeBudgetDesc = prometheus.NewDesc("parley_cluster_store_budget_bytes",
		"What the hub's disk bookings may add up to: store_bytes, or 3/4 of the disk free at the hub's start. "+
			"Booked past it (a fuller disk at a restart), the joined nodes keep theirs and a new node is refused.", nil, nil)
)

func (c hubCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- nodeOnlineDesc
	ch <- nodeSeenDesc
	ch <- nodeWaitingDesc
	ch <- storeBookedDesc
	ch <- storeBudgetDesc
}

func (c hubCollector) Collect(ch chan<- prometheus.Metric) {
	booked, budget := c.h.StoreUse()
	ch <- prometheus.MustNewConstMetric(storeBookedDesc, prometheus.GaugeValue, float64(booked))
	ch <- prometheus.MustNewConstMetric(storeBudgetDesc, prometheus.GaugeValue, float64(budget))
	ctx, cancel := contextWithTimeout(5 * time.Second)
	defer cancel()
	nodes, err := c.h.Nodes(ctx)
	if err != nil {
		c.h.log.Warn("cluster: metrics: list nodes", "err", err)
		return
	}
	for _, n := range nodes {
		online := 0.0
		if n.Online {
			online = 1
		}
		seen := 0.0
		if !n.LastSeen.IsZero() {
			seen = float64(n.LastSeen.UnixNano()) / 1e9
		}
		ch <- prometheus.MustNewConstMetric(nodeOnlineDesc, prometheus.GaugeValue, online, n.Name)
		ch <- prometheus.MustNewConstMetric(nodeSeenDesc, prometheus.GaugeValue, seen, n.Name)
		if waiting, err := c.h.Waiting(ctx, n.Name); err == nil {
			ch <- prometheus.MustNewConstMetric(nodeWaitingDesc, prometheus.GaugeValue, float64(waiting), n.Name)
		}
	}
}
