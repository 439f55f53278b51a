package remote

import (
	"context"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/gitwork"
	"github.com/parleyhq/parley/internal/push"

	"github.com/parleyhq/parley/internal/router"
)

// Machines is the hub's machines as the web channel shows them, its own
// agents under its own node name.
type Machines struct {
	hub  *cluster.Hub
	node string
}

func (m Machines) Agents(ctx context.Context, own []chat.AgentInfo) ([]chat.AgentInfo, error) {
	return m.hub.Agents(ctx, m.node, own)
}

func (m Machines) Node() string { return m.node }

func (m Machines) MachinesChanged() <-chan struct{} { return m.hub.MachinesChanged() }

func (m Machines) Machines(ctx context.Context) ([]cluster.NodeStatus, error) {
	return m.hub.Machines(ctx)
}

// hubCards is the hub's push.Remote: the nodes' threads from their summaries
// in the directory (each node writes them from its own store: open cards,
// newest finished turn and error), so the hub's phones hear of a node's
// threads as they hear of the hub's. Its watch names the threads whose
// summaries changed, so a change costs the push service one thread, not all.
type hubCards struct {
	hub   *cluster.Hub
	watch *cluster.ThreadWatch
}

func (c hubCards) Owns(id chat.ThreadID) bool { return cluster.NodeOf(id) != "" }
func (c hubCards) Ready() <-chan struct{}     { return c.watch.Ready() }
func (c hubCards) Take() ([]chat.ThreadID, bool) {
	return c.watch.Take()
}

func (c hubCards) Thread(id chat.ThreadID) (push.RemoteThread, bool) {
	rt, ok := c.hub.Thread(id)
	if !ok {
		return push.RemoteThread{}, false
	}
	var n names
	return n.pushThread(c.hub, rt), true
}

func (c hubCards) Threads() []push.RemoteThread {
	ths, err := c.hub.Threads(context.Background()) // from memory
	if err != nil {
		return nil
	}
	var n names
	out := make([]push.RemoteThread, 0, len(ths))
	for _, rt := range ths {
		out = append(out, n.pushThread(c.hub, rt))
	}
	return out
}

// names are the agents' names (node/agent → name) and the machines' join
// times, read once, and only if a push may be due.
type names struct {
	agents map[string]string
	joined map[string]time.Time
}

func (n *names) pushThread(h *cluster.Hub, rt cluster.RemoteThread) push.RemoteThread {
	if n.agents == nil && (len(rt.Cards) > 0 || rt.Turn != nil || rt.Error != nil || len(rt.Notices) > 0) {
		n.agents, n.joined = map[string]string{}, map[string]time.Time{}
		agents, _ := h.Agents(context.Background(), "", nil)
		for _, a := range agents {
			n.agents[a.Node+"/"+a.ID] = a.Name
		}
		nodes, _ := h.Nodes(context.Background())
		for _, m := range nodes {
			n.joined[m.Name] = m.Joined
		}
	}
	cards := make([]push.Card, 0, len(rt.Cards))
	for _, oc := range rt.Cards {
		cards = append(cards, push.Card{RequestID: oc.RequestID, Kind: oc.Kind, Asks: oc.Asks})
	}
	return push.RemoteThread{Thread: rt.Thread, AgentName: n.agents[rt.Node+"/"+rt.Thread.Agent], Cards: cards,
		Turn: rt.Turn, Error: rt.Error, Notices: rt.Notices, Joined: n.joined[rt.Node]}
}

// EveryMachine is the hub's router with every machine's agents.
type EveryMachine struct {
	*router.Router
	hub  *cluster.Hub
	node string
}

// Agents lists the hub's own agents under its node name, then each node's
// from its directory record (an offline node's "offline").
func (m EveryMachine) Agents() []chat.AgentInfo {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	all, _ := m.hub.Agents(ctx, m.node, m.Router.Agents()) // on an error its own are still listed
	return all
}

// EveryMachine is rt as the ACP side and the plugin host use it at the hub:
// its agents are every machine's, each with its node (as /api/agents lists
// them), and "agent@node" starts a thread there.
func (h *Hub) EveryMachine(rt *router.Router) EveryMachine {
	return EveryMachine{Router: rt, hub: h.hub, node: h.node}
}

// NodeChanges asks node for its thread's change (thread: the node's own id).
func (m Machines) NodeChanges(ctx context.Context, node string, thread chat.ThreadID, q gitwork.Query) (gitwork.Changes, error) {
	return m.hub.NodeChanges(ctx, node, thread, q)
}
