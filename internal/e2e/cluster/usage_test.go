//go:build e2e

package cluster_test

import (
	"testing"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
)

type usageSum struct {
	Key          string  `json:"key"`
	Node         string  `json:"node"`
	Turns        int64   `json:"turns"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

type usageAnswer struct {
	Total     usageSum   `json:"total"`
	ByMachine []usageSum `json:"by_machine"`
	ByThread  []usageSum `json:"by_thread"`
	Undated   string     `json:"undated"`
}

// The Usage view at the hub counts node b's threads too: each as b's own
// totals (asked of b, which keeps the events), under b's machine, its days
// said to be unknown.
func TestUsageAtTheHubCountsTheNodesThreads(t *testing.T) {
	r := newRig(t)
	s := r.hub.dial("phone", -1, "")
	s.Send(newThreadMsg("m1", "hello", r.work))
	s.WaitFor(0, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "the first turn")
	var own, hub usageAnswer
	r.node.get("/api/usage", &own)
	if own.Total.Turns != 1 || len(own.ByThread) != 1 {
		t.Fatalf("b's own usage: %+v, want the one turn", own)
	}
	r.hub.get("/api/usage", &hub)
	want := own.ByThread[0]
	want.Key, want.Node = string(cluster.RemoteID("b", chat.ThreadID(want.Key))), "b"
	if len(hub.ByThread) != 1 || hub.ByThread[0] != want {
		t.Errorf("the hub's usage per thread: %+v, want b's thread as b counts it: %+v", hub.ByThread, want)
	}
	if len(hub.ByMachine) != 1 || hub.ByMachine[0].Key != "b" || hub.ByMachine[0].Turns != 1 || hub.Undated == "" {
		t.Errorf("the hub's usage per machine: %+v (undated %q), want b's one turn, its day said unknown", hub.ByMachine, hub.Undated)
	}
}
