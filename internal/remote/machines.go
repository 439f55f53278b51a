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
// threads as they hear of the hub's.
type hubCards struct{ hub *cluster.Hub }

func (c hubCards) Owns(id chat.ThreadID) bool { return cluster.NodeOf(id) != "" }
func (c hubCards) Changed() <-chan struct{}   { return c.hub.ThreadsChanged() }
func (c hubCards) Threads() []push.RemoteThread {
	ths, err := c.hub.Threads(context.Background()) // from memory
	if err != nil {
		return nil
	}
	var names map[string]string // node/agent → name, read once if a push may be due
	var joined map[string]time.Time
	out := make([]push.RemoteThread, 0, len(ths))
	for _, rt := range ths {
		if names == nil && (len(rt.Cards) > 0 || rt.Turn != nil || rt.Error != nil || len(rt.Notices) > 0) {
			names, joined = map[string]string{}, map[string]time.Time{}
			agents, _ := c.hub.Agents(context.Background(), "", nil)
			for _, a := range agents {
				names[a.Node+"/"+a.ID] = a.Name
			}
			nodes, _ := c.hub.Nodes(context.Background())
			for _, n := range nodes {
				joined[n.Name] = n.Joined
			}
		}
		cards := make([]push.Card, 0, len(rt.Cards))
		for _, oc := range rt.Cards {
			cards = append(cards, push.Card{RequestID: oc.RequestID, Kind: oc.Kind, Asks: oc.Asks})
		}
		out = append(out, push.RemoteThread{Thread: rt.Thread, AgentName: names[rt.Node+"/"+rt.Thread.Agent], Cards: cards,
			Turn: rt.Turn, Error: rt.Error, Notices: rt.Notices, Joined: joined[rt.Node]})
	}
	return out
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
