//go:build e2e && soak

// The cluster soak is not part of `make test`: `make soak-cluster` builds it
// with the e2e and soak tags (PARLEY_CLUSTER_SOAK messages, default 1000;
// PARLEY_CLUSTER_SOAK_SEED picks the faults). docs/reliability.md has its
// results.

package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
)

// soakRoute is one person's client at the hub on a route showing one node's
// thread: a client.Follow (reconnecting with since), what it was told of each
// message, and which messages it has sent with no receipt yet (sent again
// after each reconnect, as the protocol asks).
type soakRoute struct {
	node, chat string
	f          *client.Follow

	mu       sync.Mutex
	texts    map[string]string   // message id → text, in the order sent (ids)
	ids      []string            // message ids, in the order first sent
	receipts map[string][]string // message id → the states its receipts said, in order
	details  map[string]string   // message id → the last receipt's detail
	ended    map[string]bool     // message id → its turn's prompt_done was seen
	thread   chat.ThreadID       // the route's thread (the node's, as the hub names it)
	resend   bool                // a socket opened: send the unacknowledged ids at its replay_done
	online   int                 // sockets opened
}

func newSoakRoute(server, token, node string) *soakRoute {
	r := &soakRoute{node: node, chat: "soak-" + node, texts: map[string]string{},
		receipts: map[string][]string{}, details: map[string]string{}, ended: map[string]bool{}}
	r.f = client.NewFollow(server, token, client.Options{Chat: r.chat, Since: -1})
	r.f.MinBackoff, r.f.MaxBackoff = 100*time.Millisecond, time.Second
	return r
}

// handle is the Follow's handler: it records receipts and turn ends, and
// after each reconnect's replay sends again what has no receipt.
func (r *soakRoute) handle(u client.Update) error {
	switch u.Kind {
	case client.UpdateOnline:
		r.mu.Lock()
		r.online++
		r.resend = true
		r.mu.Unlock()
	case client.UpdateEvent:
		e := u.Event
		r.mu.Lock()
		defer r.mu.Unlock()
		switch e.Type {
		case chat.TypeThread:
			r.thread = shownThread(e)
		case chat.TypeDelivery:
			var d chat.Delivery
			if e.Decode(&d) == nil {
				r.receipts[d.MessageID] = append(r.receipts[d.MessageID], d.State)
				r.details[d.MessageID] = d.Detail
			}
		case chat.TypePromptDone:
			var p chat.PromptDone
			if e.Decode(&p) == nil && p.MessageID != "" {
				r.ended[p.MessageID] = true
			}
		case chat.TypeReplayDone:
			if r.resend {
				r.resend = false
				for _, id := range r.ids {
					if len(r.receipts[id]) == 0 {
						_ = r.f.Send(context.Background(), r.input(id))
					}
				}
			}
		}
	}
	return nil
}

// input is message id's frame; the route's first message makes the thread
// on its node.
func (r *soakRoute) input(id string) map[string]any {
	m := chatsock.Msg(id, r.texts[id])
	if id == r.ids[0] {
		m["intent"] = map[string]any{"new": map[string]any{"cwd": soakWork, "node": r.node}}
	}
	return m
}

var soakWork string

// send sends a new message (or keeps it for the next socket when none is open).
func (r *soakRoute) send(id string) {
	r.mu.Lock()
	r.texts[id] = "remember " + id
	r.ids = append(r.ids, id)
	in := r.input(id)
	r.mu.Unlock()
	_ = r.f.Send(context.Background(), in)
}

// final reports whether message id has reached a state that ends it: its
// turn ended, or it failed or is unknown.
func (r *soakRoute) final(id string) bool {
	if r.ended[id] {
		return true
	}
	rs := r.receipts[id]
	if len(rs) == 0 {
		return false
	}
	last := rs[len(rs)-1]
	return last == chat.DeliveryFailed || last == chat.DeliveryUnknown
}

// waitFinal waits up to within for message id to end (see final).
func (r *soakRoute) waitFinal(id string, within time.Duration) {
	testkit.Within(within, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.final(id)
	})
}

// startHubProcOn starts the hub (no pushes) with its dashboard on httpAddr,
// the same across its restarts.
func startHubProcOn(t *testing.T, a agentSetup, httpAddr string) *hubProc {
	t.Helper()
	return startHubProcAt(t, a, false, httpAddr)
}

func soakEnv(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// A hub and nodes b and c as three `parley serve` processes, the real Claude
// Code on each node against the scripted API. A person's client at the hub
// sends PARLEY_CLUSTER_SOAK messages, alternating between a thread on b and
// one on c, while kill -9 hits node b, node c, the hub (restarted at once) or
// a node's Claude Code at random. The client reconnects with since and sends
// again what has no receipt. Counted, against each node's log and the model's
// request log: messages lost, reached twice, falsely `submitted`, failed or
// unknown with a reason, receipts that never reached the socket, and whether
// a replay at the hub equals each node's log.
func TestClusterSoak(t *testing.T) {
	total := soakEnv("PARLEY_CLUSTER_SOAK", 1000)
	seed := uint64(soakEnv("PARLEY_CLUSTER_SOAK_SEED", int(time.Now().UnixNano()%1e9)))
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Logf("%d messages, seed %d", total, seed)

	a := newAgentSetup(t)
	soakWork = a.work
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	httpAddr := ln.Addr().String() // the client's server stays the same across the hub's restarts
	ln.Close()
	hub := startHubProcOn(t, a, httpAddr)
	nodes := map[string]*proc{}
	names := []string{"b", "c"}
	for _, n := range names {
		nodes[n] = hub.joinWithEnv(n, map[string]string{"PARLEY_SOAK_NODE": n})
	}
	hub.waitOnline(len(names))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	routes := map[string]*soakRoute{}
	var running sync.WaitGroup
	for _, n := range names {
		r := newSoakRoute("http://"+httpAddr, hub.token, n)
		routes[n] = r
		running.Add(1)
		go func() { defer running.Done(); r.f.Run(ctx, r.handle) }()
	}
	defer running.Wait()
	defer cancel()

	// The person: one message at a time per route, the next once the last
	// ended or a few seconds passed (a machine away queues them).
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for i := range total {
			r := routes[names[i%len(names)]]
			id := "s" + strconv.Itoa(i)
			r.send(id)
			r.waitFinal(id, 3*time.Second)
		}
	}()

	// The faults, one at a time, on the test's goroutine.
	kills := map[string]int{}
	agentsOf := func(n string) []int { return testkit.PIDsWithEnv("PARLEY_SOAK_NODE="+n, "claude") }
	for waiting := true; waiting; {
		select {
		case <-sent:
			waiting = false
			continue
		case <-time.After(time.Duration(1500+rng.IntN(3500)) * time.Millisecond):
		}
		switch k := rng.IntN(4); {
		case k == 0:
			kills["hub"]++
			hub.cmd.Process.Signal(syscall.SIGKILL)
			hub.cmd.Wait()
			hub.start()
		case k <= 2:
			n := names[k-1]
			kills["node "+n]++
			p := nodes[n]
			p.cmd.Process.Signal(syscall.SIGKILL)
			p.cmd.Wait()
			for _, pid := range agentsOf(n) {
				syscall.Kill(pid, syscall.SIGKILL) // the agent the killed daemon left
			}
			time.Sleep(time.Duration(rng.IntN(3000)) * time.Millisecond)
			p.start()
		default:
			n := names[rng.IntN(len(names))]
			if pids := agentsOf(n); len(pids) > 0 {
				kills["agent on "+n]++
				syscall.Kill(pids[rng.IntN(len(pids))], syscall.SIGKILL)
			}
		}
	}
	t.Logf("faults: %v", kills)
	hub.waitOnline(len(names))

	// Every message ends on its socket within a few minutes of the last
	// fault, or it is counted as a receipt that never reached the socket.
	settle := time.Now().Add(3 * time.Minute)
	for _, r := range routes {
		r.mu.Lock()
		ids := slices.Clone(r.ids)
		r.mu.Unlock()
		for _, id := range ids {
			r.waitFinal(id, time.Until(settle))
		}
	}

	asked := map[string]int{} // the model's requests by the person text they end on
	seen := map[string]bool{} // every person text the model was shown, in any request's history
	for _, req := range a.api.ScenarioRequests() {
		asked[req.LastUserText()]++
		for _, text := range req.UserTexts() {
			seen[text] = true
		}
	}
	var lost, twice, falseSubmitted, failedWithReason, failedBare, neverShown, askedTwice, messages int
	var problems []string
	for _, n := range names {
		r := routes[n]
		r.mu.Lock()
		remote := r.thread
		r.mu.Unlock()
		_, local, ok := cluster.SplitRemoteID(remote)
		if !ok {
			t.Fatalf("route %s shows %q, not a node's thread", r.chat, remote)
		}
		// The node's own log, and the hub's replay of it, from seq 0.
		nodeLog := restLog(t, nodes[n], local)
		viaHub := hub.dial(r.chat, 0, remote)
		hubLog := seqFrames(t, viaHub.Snapshot())
		if !mapsEqual(nodeLog, hubLog) {
			problems = append(problems, fmt.Sprintf("node %s: the hub's replay (%d events) differs from the node's log (%d)", n, len(hubLog), len(nodeLog)))
		}
		inLog := map[string]int{}
		for s := int64(1); s <= int64(len(nodeLog)); s++ {
			raw, ok := nodeLog[s]
			if !ok {
				t.Fatalf("node %s's log has no seq %d of %d", n, s, len(nodeLog))
			}
			var e struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			json.Unmarshal([]byte(raw), &e)
			if e.Type == chat.TypeUserMessage {
				inLog[e.Text]++
			}
		}
		r.mu.Lock()
		for _, id := range r.ids {
			messages++
			text := r.texts[id]
			rs := r.receipts[id]
			last := ""
			if len(rs) > 0 {
				last = rs[len(rs)-1]
			}
			switch {
			case inLog[text] > 1:
				twice++
				problems = append(problems, fmt.Sprintf("%s in %s's log %d times", id, n, inLog[text]))
			case inLog[text] == 0 && last != chat.DeliveryFailed && last != chat.DeliveryUnknown:
				lost++
				problems = append(problems, fmt.Sprintf("%s lost: not in %s's log, receipts %v", id, n, rs))
			}
			if asked[text] > 1 {
				askedTwice++
			}
			if slices.Contains(rs, chat.DeliveryUnknown) || last == chat.DeliveryFailed {
				if r.details[id] != "" {
					failedWithReason++
				} else {
					failedBare++
					problems = append(problems, fmt.Sprintf("%s %s with no reason", id, last))
				}
			}
			if slices.Contains(rs, chat.DeliveryFailed) && seen[text] {
				problems = append(problems, fmt.Sprintf("%s failed, but the model saw it (receipts %v)", id, rs))
			}
			// Submitted is "the agent has it": Claude Code may keep a
			// message and be killed before it asks the model; the resumed
			// conversation then shows it to the model in a later request.
			if slices.Contains(rs, chat.DeliverySubmitted) && !seen[text] {
				falseSubmitted++
				problems = append(problems, fmt.Sprintf("%s submitted, the model never saw it (receipts %v, %d times in %s's log)", id, rs, inLog[text], n))
			}
			if inLog[text] > 0 && !r.final(id) && !slices.Contains(rs, chat.DeliverySubmitted) {
				neverShown++
				problems = append(problems, fmt.Sprintf("%s in %s's log, its socket shows %v", id, n, rs))
			}
		}
		t.Logf("route %s: %d sockets opened", r.chat, r.online)
		r.mu.Unlock()
	}
	t.Logf("RESULT %d messages, faults %v: %d lost, %d twice in a log, %d asked of the model twice, %d false submitted, %d failed or unknown with a reason, %d with none, %d receipts that never reached the socket, seed %d",
		messages, kills, lost, twice, askedTwice, falseSubmitted, failedWithReason, failedBare, neverShown, seed)
	if len(problems) > 0 {
		t.Fatalf("%d problems:\n%s", len(problems), joinLines(problems))
	}
}

// restLog is thread local's whole log as node p's REST API answers it, keyed
// by seq, each frame without its thread field (as seqFrames has them).
func restLog(t *testing.T, p *proc, local chat.ThreadID) map[int64]string {
	t.Helper()
	var page struct {
		Events []json.RawMessage `json:"events"`
	}
	p.get("/api/threads/"+string(local)+"/events?since=0&limit=10000", &page)
	out := map[int64]string{}
	for _, raw := range page.Events {
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "thread")
		seq, _ := m["seq"].(float64)
		b, _ := json.Marshal(m)
		out[int64(seq)] = string(b)
	}
	return out
}

func mapsEqual(a, b map[int64]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func joinLines(s []string) string {
	out := ""
	for _, l := range s {
		out += "  " + l + "\n"
	}
	return out
}
