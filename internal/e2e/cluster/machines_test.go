//go:build e2e

package cluster_test

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
)

// agentsAt reads GET /api/agents of m.
func agentsAt(m *machine) []chat.AgentInfo {
	m.t.Helper()
	var body struct {
		Agents []chat.AgentInfo `json:"agents"`
		Node   string           `json:"node"`
	}
	m.get("/api/agents", &body)
	if want := map[bool]string{true: m.cfg.Cluster.Node}[m.cfg.Cluster.Listen != ""]; body.Node != want {
		m.t.Fatalf("/api/agents names this machine %q, want %q", body.Node, want)
	}
	return body.Agents
}

// changesAt opens m's /api/threads/changes and yields its events' names.
func changesAt(m *machine) <-chan string {
	m.t.Helper()
	req, _ := http.NewRequestWithContext(m.t.Context(), "GET", "http://"+m.d.Addr()+"/api/threads/changes", nil)
	req.Header.Set("Authorization", "Bearer "+m.d.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		m.t.Fatal(err)
	}
	m.t.Cleanup(func() { resp.Body.Close() })
	out := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if name, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				select {
				case out <- name:
				case <-m.t.Context().Done():
					return
				}
			}
		}
	}()
	return out
}

// agentOn finds the agent id of machine node in list.
func agentOn(list []chat.AgentInfo, node, id string) (chat.AgentInfo, bool) {
	for _, a := range list {
		if a.Node == node && a.ID == id {
			return a, true
		}
	}
	return chat.AgentInfo{}, false
}

// nodesAt reads GET /api/nodes of m.
func nodesAt(m *machine) []cluster.NodeStatus {
	m.t.Helper()
	var body struct {
		Nodes []cluster.NodeStatus `json:"nodes"`
	}
	m.get("/api/nodes", &body)
	return body.Nodes
}

// The hub lists each machine's agents with its machine (REST and the
// socket's config event) and its machines as `parley nodes` does; a
// machine that stops stays listed, offline, its agents with it.
func TestTheHubListsEveryMachinesAgentsAndItsMachines(t *testing.T) {
	r := newRig(t)

	list := agentsAt(r.hub)
	own, okOwn := agentOn(list, "hub", "claude")
	onB, okB := agentOn(list, "b", "claude")
	if len(list) != 2 || !okOwn || !okB || own.Status != "ready" || onB.Status != "ready" || onB.Transport != "stream" {
		t.Fatalf("the hub's /api/agents: %+v, want claude on hub and claude on b, both ready", list)
	}
	s := r.hub.dial("phone", -1, "")
	var cfg chat.Config
	if err := s.Get(s.WaitFor(0, wait, chatsock.Type(chat.TypeConfig), "config")).Decode(&cfg); err != nil {
		t.Fatal(err)
	}
	if _, ok := agentOn(cfg.Agents, "b", "claude"); !ok || len(cfg.Agents) != 2 {
		t.Fatalf("the hub's config event lists %+v, want b's agent with its machine", cfg.Agents)
	}
	// A node's own dashboard lists its own agents, with no machine, and
	// has no machines to list.
	if l := agentsAt(r.node); len(l) != 1 || l[0].Node != "" {
		t.Fatalf("b's own /api/agents: %+v", l)
	}
	req, _ := http.NewRequest("GET", "http://"+r.node.d.Addr()+"/api/nodes", nil)
	req.Header.Set("Authorization", "Bearer "+r.node.d.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("b's /api/nodes: %s, want 404", resp.Status)
	}

	// A thread on b counts among b's.
	s.Send(newThreadMsg("m1", "hello", r.work))
	s.WaitFor(0, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "the first turn on b")
	s.WaitFor(0, wait, func(e client.Event) bool { return shownThread(e) != "" }, "the route's thread")
	var nodes []cluster.NodeStatus
	testkit.Eventually(t, wait, func() bool {
		nodes = nodesAt(r.hub)
		return len(nodes) == 1 && nodes[0].Name == "b" && nodes[0].Online && nodes[0].Threads == 1
	}, "b listed online with its one thread")
	if n := nodes[0]; len(n.Agents) != 1 || n.LastSeen.IsZero() || n.Since.IsZero() {
		t.Fatalf("b at the hub: %+v", n)
	}

	// b stops: offline, its agents listed offline, its thread still counted;
	// an open dashboard's change stream says so, without a poll.
	events := changesAt(r.hub)
	if ev := <-events; ev != "ready" {
		t.Fatalf("the hub's change stream began with %q, want ready", ev)
	}
	r.node.stop()
	for heard := false; !heard; {
		select {
		case ev := <-events: // "threads" may come too: b's thread's last events
			heard = ev == "machines"
		case <-time.After(wait):
			t.Fatal("b stopped, the hub's change stream did not say a machine changed")
		}
	}
	r.waitOnline(false)
	nodes = nodesAt(r.hub)
	if len(nodes) != 1 || nodes[0].Online || nodes[0].Threads != 1 || nodes[0].Since.IsZero() {
		t.Fatalf("b stopped, at the hub: %+v", nodes)
	}
	list = agentsAt(r.hub)
	if a, ok := agentOn(list, "b", "claude"); !ok || a.Status != cluster.AgentOffline {
		t.Fatalf("b stopped, the hub's /api/agents: %+v, want b's claude offline", list)
	}
	if a, _ := agentOn(list, "hub", "claude"); a.Status != "ready" {
		t.Fatalf("the hub's own agent with b stopped: %+v", a)
	}
}
