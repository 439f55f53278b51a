//go:build e2e

package cluster_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/auth"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
)

// proc is a machine as a real `parley serve` process with its own data
// directory: its dashboard's address (once started) and its token.
type proc struct {
	*nodeProc
	data, token string
}

func (p *proc) dial(chatID string, since int64, thread chat.ThreadID) *chatsock.Conn {
	p.t.Helper()
	s := chatsock.Dial(p.t, "http://"+p.addr, p.token, client.Options{Chat: chatID, Since: since, Thread: thread})
	s.WaitFor(0, wait, chatsock.Type(chat.TypeReplayDone), "replay_done")
	return s
}

func (p *proc) get(path string, v any) {
	p.t.Helper()
	(&machine{t: p.t}).getAt(p.addr, p.token, path, v)
}

// hubProc is the hub as a `parley serve` process, on a cluster listener that
// stays the same across its restarts (the nodes' configs name it).
type hubProc struct {
	*proc
	listen string
	a      agentSetup
}

// startHubProc starts the hub; pushes runs it as this test binary pushing to
// the Web Push stand-in (testkit/pushchild).
func startHubProc(t *testing.T, a agentSetup, pushes bool) *hubProc {
	t.Helper()
	return startHubProcAt(t, a, pushes, "127.0.0.1:0")
}

func startHubProcAt(t *testing.T, a agentSetup, pushes bool, httpAddr string) *hubProc {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := ln.Addr().String() // the join tokens carry it
	ln.Close()
	h := &hubProc{proc: a.proc(t, "hub", fmt.Sprintf("addr = %q\n\n[cluster]\nlisten = %q\nnode = \"hub\"\n", httpAddr, listen)), listen: listen, a: a}
	h.name, h.pushes = "the hub", pushes
	h.start()
	h.loadToken()
	return h
}

// join joins node name to the hub with a token of its own (its key made
// and registered, as `parley join` does) and starts it as a `parley serve`
// process running the real Claude Code (stream) against the scripted API.
func (h *hubProc) join(name string) *proc { return h.joinWithEnv(name, nil) }

// joinWithEnv is join with extra variables in the agent's environment (a
// mark to find that node's agent processes by).
func (h *hubProc) joinWithEnv(name string, extra map[string]string) *proc {
	t := h.t
	t.Helper()
	tok, err := cluster.IssueToken(h.data, h.listen, name, time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(h.a.root, name)
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.Join(t.Context(), data, tok, name, "test"); err != nil {
		t.Fatal(err)
	}
	var env []string
	for k, v := range h.a.env {
		env = append(env, strconv.Quote(k)+" = "+strconv.Quote(v))
	}
	for k, v := range extra {
		env = append(env, strconv.Quote(k)+" = "+strconv.Quote(v))
	}
	p := h.a.proc(t, name, fmt.Sprintf(`addr = "127.0.0.1:0"
roots = [%q]

[[agent]]
id = "claude"
name = "Claude Code"
transport = "stream"
command = %q
env = { %s }

[cluster]
hub = %q
node = %q
heartbeat = "2s"
`, h.a.work, testkit.ClaudeBin(t), strings.Join(env, ", "), h.listen, name))
	if name == "b" {
		p.name = "" // the log's "node b"
	}
	p.start()
	p.loadToken()
	return p
}

// waitOnline waits until the hub has n machines online.
func (h *hubProc) waitOnline(n int) {
	h.t.Helper()
	testkit.Eventually(h.t, 2*wait, func() bool {
		var v struct {
			Nodes []cluster.NodeStatus `json:"nodes"`
		}
		h.get("/api/nodes", &v)
		online := 0
		for _, n := range v.Nodes {
			if n.Online {
				online++
			}
		}
		return online == n
	}, "%d machines online at the hub", n)
}

// proc is machine name's process, not started, with its data directory
// under the test's root and config written there.
func (a agentSetup) proc(t *testing.T, name, config string) *proc {
	t.Helper()
	cfg := filepath.Join(a.root, name+".toml")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(a.root, name)
	return &proc{nodeProc: &nodeProc{t: t, name: name, args: []string{testkit.ParleyBinary(t), "serve", "--data", data, "--config", cfg}}, data: data}
}

// loadToken reads the token the process made in its data directory.
func (p *proc) loadToken() {
	p.t.Helper()
	tok, err := auth.LoadOrCreate(p.data)
	if err != nil {
		p.t.Fatal(err)
	}
	p.token = tok
}

// startProcs starts a hub and the named nodes as `parley serve` processes
// (see join), and waits until the hub has every node online.
func startProcs(t *testing.T, a agentSetup, nodes ...string) (*hubProc, map[string]*proc) {
	t.Helper()
	hub := startHubProc(t, a, false)
	out := map[string]*proc{}
	for _, name := range nodes {
		out[name] = hub.join(name)
	}
	hub.waitOnline(len(nodes))
	return hub, out
}
