package cluster

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/parleyhq/parley/internal/chat"
)

// Record is a node's directory entry: the node sends it at every heartbeat
// (parley.from.<node>.dir), the hub checks it and writes $KV.parley_nodes.<node>.
type Record struct {
	Node    string `json:"node"`
	Version string `json:"version"`
	// Protocol is the node's cluster protocol (protocol.go); 0 is 1.
	Protocol int      `json:"protocol,omitempty"`
	Agents   []string `json:"agents"`
	// AgentInfo is each agent as a new thread picks it (id, name, roots).
	AgentInfo []chat.AgentInfo `json:"agent_info,omitempty"`
	// Roots confine a new thread's directory on this node (checked there).
	Roots []string `json:"roots,omitempty"`
	// Every is the node's heartbeat interval; the hub counts a node offline
	// after OfflineAfter of them without one.
	Every time.Duration `json:"every"`
	// Since is when the node's link came up (the node's clock).
	Since time.Time `json:"since"`
	// Offline is set by a node that stops cleanly, so it shows offline at once.
	Offline bool `json:"offline,omitempty"`
}

// OfflineAfter is how many heartbeat intervals without one make a node offline.
const OfflineAfter = 3

// NodeStatus is one line of `parley nodes`.
type NodeStatus struct {
	Name    string    `json:"name"`
	Online  bool      `json:"online"`
	Joined  time.Time `json:"joined"`
	Version string    `json:"version,omitempty"`
	Agents  []string  `json:"agents,omitempty"`
	// AgentInfo and Roots are what a new thread on the node may pick.
	AgentInfo []chat.AgentInfo `json:"agent_info,omitempty"`
	Roots     []string         `json:"roots,omitempty"`
	// Threads counts the node's threads in the directory (Machines; 0 from Nodes).
	Threads int `json:"threads"`
	// Since is when it came online (node's clock) or, offline, when it was last seen.
	Since time.Time `json:"since,omitzero"`
	// LastSeen is the hub's time of its last heartbeat (the hub's clock: a
	// node's clock may be off).
	LastSeen time.Time `json:"last_seen,omitzero"`
	// until is when an online node goes offline without another heartbeat.
	until time.Time
}

// fill makes s of r, which the hub stored at at. heard says this hub run
// stored it: a record loaded from disk at the hub's start was said to the
// hub that is gone, so it tells when the node was last seen, never that it
// is online (its link may still be on its way back, and until it is the
// node answers nothing).
func (s *NodeStatus) fill(r Record, at time.Time, heard bool, now time.Time) {
	s.Version, s.Agents, s.LastSeen = r.Version, r.Agents, at
	s.AgentInfo, s.Roots = r.AgentInfo, r.Roots
	every := r.Every
	if every <= 0 {
		every = DefaultHeartbeat
	}
	s.until = at.Add(OfflineAfter * every)
	s.Online = heard && !r.Offline && now.Before(s.until)
	if s.Online {
		s.Since = r.Since
	} else {
		s.Since = at
	}
}

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
