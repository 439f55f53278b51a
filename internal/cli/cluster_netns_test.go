package cli_test

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/netns"
)

// A hub and two nodes, each `parley serve` in its own network namespace: each
// node reaches the hub over its own link and cannot reach the other node. Both
// join, dial out, and show online at the hub.
func TestNodesInTheirOwnNetworksReachOnlyTheHub(t *testing.T) {
	star := netns.NewStar(t, "a", "b")
	bin := testkit.ParleyBinary(t)
	hubEnv := machineEnv(t)
	hubData := filepath.Join(t.TempDir(), "hub")
	// Inside its own namespace the hub may take a fixed port.
	startProc(t, netns.Command(star.Centre, bin, "serve", "--data", hubData, "--cluster-listen", "0.0.0.0:7431"), hubEnv, nil).line(t, hubLine)

	// join-token only reads the hub's data directory; on 0.0.0.0 it needs the
	// address each node dials.
	if out, err := run(t, bin, hubEnv, "join-token", "--data", hubData); err == nil || !strings.Contains(out, "advertise") {
		t.Fatalf("join-token for a hub on 0.0.0.0 without --hub: %s %v, want it to ask for the address", out, err)
	}
	for _, name := range []string{"a", "b"} {
		leaf := star.Leaves[name]
		jt := exec.Command(bin, "join-token", "--data", hubData, "--name", name, "--hub", leaf.CentreAddr+":7431")
		jt.Env = hubEnv
		out, err := jt.Output()
		m := joinLine.FindStringSubmatch(string(out))
		if err != nil || m == nil {
			t.Fatalf("join-token for %s: %q %v", name, out, err)
		}
		env := machineEnv(t)
		data := filepath.Join(t.TempDir(), name)
		join := netns.Command(leaf.NS, bin, "join", m[1], "--data", data)
		join.Env = env
		if out, err := join.CombinedOutput(); err != nil {
			t.Fatalf("join %s: %s", name, out)
		}
		// b's dashboard listens on its link, so the test can show a cannot reach it.
		if name == "b" {
			env = append(env, "PARLEY_ADDR=0.0.0.0:7430")
		}
		startProc(t, netns.Command(leaf.NS, bin, "serve", "--data", data), env, nil).line(t, nodeLine)
	}

	reach := func(ns, addr string) error {
		return netns.Command(ns, "bash", "-c", `exec 3<>"/dev/tcp/$1"`, "reach", strings.Replace(addr, ":", "/", 1)).Run()
	}
	if err := reach(star.Centre, star.Leaves["b"].Addr+":7430"); err != nil {
		t.Fatalf("the hub's namespace cannot reach b's dashboard: %v (the check itself is broken)", err)
	}
	if err := reach(star.Leaves["a"].NS, star.Leaves["b"].Addr+":7430"); err == nil {
		t.Fatal("node a reaches node b: the namespaces do not separate the nodes")
	}

	for deadline := time.Now().Add(60 * time.Second); ; {
		nodes := netns.Command(star.Centre, bin, "nodes", "--json", "--data", hubData)
		nodes.Env = hubEnv
		out, err := nodes.Output()
		if err != nil {
			t.Fatalf("parley nodes: %v", err)
		}
		var list []struct {
			Name   string `json:"name"`
			Online bool   `json:"online"`
		}
		if err := json.Unmarshal(out, &list); err != nil {
			t.Fatal(err)
		}
		if len(list) == 2 && list[0].Online && list[1].Online {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the nodes never both showed online: %s", out)
		}
	}
}
