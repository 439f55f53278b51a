package cluster_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/auth"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
)

// The hub, a real `parley serve` process with its own data directory, is
// killed with kill -9 while messages from its socket to node b are in
// flight. After its restart the person's client sends again what had no
// receipt (as a client does); b's log then holds each message once, each
// turn ended, and no gap: nothing lost, nothing twice.
func TestAKilledHubLosesAndDoublesNoMessage(t *testing.T) {
	a := newAgentSetup(t)
	bin := testkit.ParleyBinary(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := ln.Addr().String() // the same after the restart: b's config names it
	ln.Close()
	hubData := filepath.Join(a.root, "hub")
	hubCfg := filepath.Join(a.root, "hub.toml")
	if err := os.WriteFile(hubCfg, []byte(fmt.Sprintf("addr = \"127.0.0.1:0\"\n\n[cluster]\nlisten = %q\nnode = \"hub\"\n", listen)), 0o600); err != nil {
		t.Fatal(err)
	}
	hub := &nodeProc{t: t, name: "the hub", args: []string{bin, "serve", "--data", hubData, "--config", hubCfg}}
	hub.start()
	token, err := auth.LoadOrCreate(hubData)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := cluster.IssueToken(hubData, listen, "b", time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default(filepath.Join(a.root, "b"), a.work)
	cfg.Addr = "127.0.0.1:0"
	cfg.Agents = []config.Agent{{ID: "claude", Name: "Claude Code", Transport: config.TransportStream, Command: testkit.ClaudeBin(t), Env: a.env}}
	cfg.Cluster.Node, cfg.Cluster.Hub = "b", listen
	cfg.Cluster.Heartbeat = config.Duration{Duration: 2 * time.Second}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.Join(t.Context(), cfg.DataDir, tok, "b", "test"); err != nil {
		t.Fatal(err)
	}
	b := &machine{t: t, cfg: cfg}
	b.start()
	t.Cleanup(b.stop)
	// b answers at the hub: the thread list names its threads (or is empty)
	// and its machine shows online.
	online := func() {
		t.Helper()
		testkit.Eventually(t, 2*wait, func() bool {
			var v struct {
				Nodes []cluster.NodeStatus `json:"nodes"`
			}
			b.getAt(hub.addr, token, "/api/nodes", &v)
			return len(v.Nodes) == 1 && v.Nodes[0].Online
		}, "b online at the hub")
	}
	online()
	dial := func() *chatsock.Conn {
		s := chatsock.Dial(t, "http://"+hub.addr, token, client.Options{Chat: "phone"})
		s.WaitFor(0, wait, chatsock.Type(chat.TypeReplayDone), "replay_done")
		return s
	}
	s := dial()
	s.Send(newThreadMsg("m1", "hello", a.work))
	s.WaitFor(0, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "the first turn")
	remoteID := shownThread(s.Get(s.WaitFor(0, wait, func(e client.Event) bool { return shownThread(e) != "" }, "the route's thread")))
	_, local, _ := cluster.SplitRemoteID(remoteID)

	from := s.Len()
	ids := []string{"w1", "w2", "w3"}
	for _, id := range ids {
		s.Send(chatsock.Msg(id, "remember "+id))
	}
	s.WaitFor(from, wait, chatsock.Delivery("w1", chat.DeliveryQueued), "w1 taken")
	if err := hub.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	hub.cmd.Wait()
	receipted := map[string]bool{}
	for _, e := range s.Snapshot()[from:] {
		if e.Type == chat.TypeDelivery {
			receipted[fmt.Sprint(chatsock.FieldOf(e, "message_id"))] = true
		}
	}
	s.Client().Close()

	hub.start()
	online()
	s = dial()
	for _, id := range ids {
		if !receipted[id] {
			s.Send(chatsock.Msg(id, "remember "+id))
		}
	}
	var log struct {
		Events []struct {
			Type      string `json:"type"`
			Seq       int64  `json:"seq"`
			Text      string `json:"text"`
			MessageID string `json:"message_id"`
		} `json:"events"`
	}
	testkit.Eventually(t, 2*wait, func() bool {
		b.get("/api/threads/"+string(local)+"/events?since=0", &log)
		done := 0
		for _, e := range log.Events {
			if e.Type == chat.TypePromptDone && (e.MessageID == "w1" || e.MessageID == "w2" || e.MessageID == "w3") {
				done++
			}
		}
		return done >= len(ids)
	}, "each message's turn done on b")
	seen := map[string]int{}
	var last int64
	for _, e := range log.Events {
		if e.Seq != last+1 {
			t.Fatalf("b's log jumps from %d to %d", last, e.Seq)
		}
		last = e.Seq
		if e.Type == chat.TypeUserMessage {
			seen[e.Text]++
		}
	}
	for _, id := range ids {
		if seen["remember "+id] != 1 {
			t.Fatalf("%s in b's log %d times, want once (%v; receipts before the kill: %v)", id, seen["remember "+id], seen, receipted)
		}
	}
}
