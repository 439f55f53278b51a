package cluster

import (
	"time"

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
