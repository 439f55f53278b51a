package cluster

import (
	"context"
	"slices"
	"strings"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/push"
)

// What the hub shows people of its machines: `parley nodes`, the
// dashboard's Machines view (GET /api/nodes) and every machine's agents as a
// new thread picks them (GET /api/agents, the socket's config event).

// AgentOffline is an agent's status while its machine is offline: listed,
// not gone (its threads wait for it), but no new thread starts there.
const AgentOffline = "offline"

// Machines lists the joined nodes as Nodes does, each with the number of its
// threads in the directory.
func (h *Hub) Machines(ctx context.Context) ([]NodeStatus, error) {
	nodes, err := h.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	count := h.threadCounts()
	for i := range nodes {
		nodes[i].Threads = count[nodes[i].Name]
	}
	return nodes, nil
}

// threadCounts counts the thread summaries in the directory by node.
func (h *Hub) threadCounts() map[string]int {
	count := map[string]int{}
	h.summaries.each(func(_ string, v held[RemoteThread]) { count[v.val.Node]++ })
	return count
}

// Agents lists every machine's agents, each with its node: own (the hub's
// own agents) under the hub's name local, then each joined node's from its
// directory record, an offline node's with status AgentOffline. A node never
// heard from has none listed. On an error own is still returned, named.
func (h *Hub) Agents(ctx context.Context, local string, own []chat.AgentInfo) ([]chat.AgentInfo, error) {
	out := make([]chat.AgentInfo, 0, len(own))
	for _, a := range own {
		a.Node = local
		out = append(out, a)
	}
	nodes, err := h.Nodes(ctx)
	if err != nil {
		return out, err
	}
	for _, n := range nodes {
		out = append(out, n.agents()...)
	}
	return out, nil
}

// agents are the node's agents as its last record gave them.
func (s NodeStatus) agents() []chat.AgentInfo {
	info := s.AgentInfo
	if len(info) == 0 {
		// A record with ids only: the agents are there, their details not.
		for _, id := range s.Agents {
			info = append(info, chat.AgentInfo{ID: id, Status: "ready"})
		}
	}
	out := make([]chat.AgentInfo, 0, len(info))
	for _, a := range info {
		a.Node = s.Name
		if !s.Online {
			a.Status = AgentOffline
		}
		out = append(out, a)
	}
	return out
}

// RemoteThread is a node's thread as the hub lists it.
type RemoteThread struct {
	Node   string
	Thread chat.Thread // ID is the remote id
	// Cards are its open cards as its node last told (its summary).
	Cards []OpenCard
	// Turn and Error are its newest finished turn and newest error that
	// call for an optional push, as its node last told; nil: none.
	Turn, Error *push.Notice
	// Notices are its newest notice events with their words, oldest first.
	Notices []push.Notice
}

// Threads lists every joined node's thread summaries from the directory (the
// hub's copy in memory; a summary a revoked node wrote while it was being
// revoked is not listed), by id.
func (h *Hub) Threads(context.Context) ([]RemoteThread, error) {
	h.mu.Lock()
	reg := h.reg
	h.mu.Unlock()
	var out []RemoteThread
	h.summaries.each(func(_ string, v held[RemoteThread]) {
		if _, joined := reg.find(v.val.Node); joined {
			out = append(out, v.val)
		}
	})
	slices.SortFunc(out, func(a, b RemoteThread) int { return strings.Compare(string(a.Thread.ID), string(b.Thread.ID)) })
	return out, nil
}
