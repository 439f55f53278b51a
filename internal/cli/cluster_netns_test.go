package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
	"github.com/parleyhq/parley/internal/testkit/netns"
)

// A hub and two nodes, each `parley serve` in its own network namespace: each
// node reaches the hub over its own link and cannot reach the other node. Both
// join, dial out, and show online at the hub. Node b runs the real Claude Code
// against a model API that only b's namespace reaches, and `parley send
// --agent claude@b` at the hub, in the hub's namespace, gets its answer.
func TestNodesInTheirOwnNetworksReachOnlyTheHub(t *testing.T) {
	t.Parallel()
	star := netns.NewStar(t, "a", "b")
	bin := testkit.ParleyBinary(t)
	claude := testkit.ClaudeBin(t)
	const answer = "Hello from the model only b reaches."
	modelLn := netns.Listen(t, star.Leaves["b"].NS, "127.0.0.1:0")
	model := claudeapi.StartOn(t, modelLn, claudeapi.Scenario{Rules: []claudeapi.Rule{
		{Match: claudeapi.Match{Exact: "hello"}, Reply: claudeapi.Text(answer, 3, 0)},
	}})
	hubEnv := machineEnv(t)
	hubData := filepath.Join(t.TempDir(), "hub")
	// Inside its own namespace the hub may take a fixed port.
	hub := startProc(t, netns.Command(star.Centre, bin, "serve", "--data", hubData, "--cluster-listen", "0.0.0.0:7431"), hubEnv, nil)
	hub.line(t, hubLine)

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
			addClaude(t, env, claude, model.URL)
		}
		args := []string{"serve", "--data", data}
		if name == "b" {
			args = append(args, "--insecure-http") // the test's own network namespaces
		}
		startProc(t, netns.Command(leaf.NS, bin, args...), env, nil).line(t, nodeLine)
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
	if err := reach(star.Centre, modelLn.Addr().String()); err == nil {
		t.Fatal("the hub's namespace reaches b's model API: it is not b's alone")
	}

	var listed []byte
	testkit.Eventually(t, 60*time.Second, func() bool {
		nodes := netns.Command(star.Centre, bin, "nodes", "--json", "--data", hubData)
		nodes.Env = hubEnv
		out, err := nodes.Output()
		listed = out
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
		return len(list) == 2 && list[0].Online && list[1].Online
	}, "the nodes never both showed online: %s", testkit.Later(func() any { return string(listed) }))

	// The hub's own terminal asks claude on b: the message crosses to b, b's
	// Claude Code asks the model only b reaches, the answer comes back.
	tok, err := run(t, bin, hubEnv, "token", "--data", hubData)
	if err != nil {
		t.Fatal(tok)
	}
	send := netns.Command(star.Centre, bin, "send", "--server", "http://"+hub.addr, "--token", strings.TrimSpace(tok),
		"--chat", "term", "--agent", "claude@b", "hello")
	send.Env = hubEnv
	var stderr strings.Builder
	send.Stderr = &stderr
	out, err := send.Output()
	if err != nil || !strings.Contains(string(out), answer) {
		t.Fatalf("parley send --agent claude@b at the hub: %v\nstdout: %s\nstderr: %s", err, out, stderr.String())
	}
	if n := len(model.ScenarioRequests()); n != 1 {
		t.Fatalf("b's model API had %d turns, want 1", n)
	}
}

// addClaude adds the real Claude Code, pointed at the model API at url, to
// the config `parley join` wrote for the machine of env, working in a folder
// of its home.
func addClaude(t *testing.T, env []string, claude, url string) {
	t.Helper()
	home := strings.TrimPrefix(env[0], "HOME=")
	work := filepath.Join(home, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	agentEnv, err := claudeapi.WriteHome(url, t.TempDir(), work)
	if err != nil {
		t.Fatal(err)
	}
	// The daemon runs with no PATH (machineEnv); Claude Code's launcher needs one.
	agentEnv = append(agentEnv, "PATH="+os.Getenv("PATH"))
	var b strings.Builder
	b.WriteString("\n[[agent]]\nid = \"claude\"\nname = \"Claude Code\"\ntransport = \"stream\"\n")
	fmt.Fprintf(&b, "command = %s\nroots = [%s]\nenv = { ", strconv.Quote(claude), strconv.Quote(work))
	for i, kv := range agentEnv {
		k, v, _ := strings.Cut(kv, "=")
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s = %s", k, strconv.Quote(v))
	}
	b.WriteString(" }\n")
	cfg := filepath.Join(strings.TrimPrefix(env[1], "XDG_CONFIG_HOME="), "parley", "config.toml")
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(b.String()); err != nil {
		t.Fatal(err)
	}
}
