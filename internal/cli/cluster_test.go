package cli_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/testkit"
)

// daemonProc is a real `parley serve` process.
type daemonProc struct {
	cmd   *exec.Cmd
	lines chan string
	addr  string                // its dashboard
	log   *testkit.LockedBuffer // its stderr
}

// env is a machine of its own: a home, a config directory, no agents on PATH.
func machineEnv(t *testing.T) []string {
	home := t.TempDir()
	return []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "PATH=", "PARLEY_ADDR=127.0.0.1:0"}
}

func startServe(t *testing.T, bin string, env []string, args ...string) *daemonProc {
	t.Helper()
	return startProc(t, exec.Command(bin, append([]string{"serve"}, args...)...), env, args)
}

// startProc starts a `parley serve` command and waits for its dashboard link.
func startProc(t *testing.T, cmd *exec.Cmd, env []string, args []string) *daemonProc {
	t.Helper()
	cmd.Dir = t.TempDir()
	cmd.Env = env
	stdout, _ := cmd.StdoutPipe()
	stderr := &testkit.LockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &daemonProc{cmd: cmd, lines: make(chan string, 64), log: stderr}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
		if t.Failed() {
			t.Logf("parley serve %v stderr:\n%s", args, stderr.String())
		}
	})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	for line := range p.lines {
		if m := loginLink.FindStringSubmatch(line); m != nil {
			p.addr = m[1]
			return p
		}
	}
	t.Fatalf("parley serve %v printed no link; stderr:\n%s", args, stderr.String())
	return nil
}

// line waits for the daemon to print a line matching re.
func (p *daemonProc) line(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				t.Fatalf("the daemon's output ended before %s", re)
			}
			if m := re.FindStringSubmatch(l); m != nil {
				return m
			}
		case <-timeout:
			t.Fatalf("the daemon did not print %s", re)
		}
	}
}

func run(t *testing.T, bin string, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func metrics(t *testing.T, bin string, env []string, data, addr string) string {
	t.Helper()
	tok, err := run(t, bin, env, "token", "--data", data)
	if err != nil {
		t.Fatal(tok)
	}
	req, _ := http.NewRequest("GET", "http://"+addr+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(tok))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

var (
	hubLine   = regexp.MustCompile(`cluster hub \(NATS with TLS on (\S+)\)`)
	nodeLine  = regexp.MustCompile(`This machine is node "([^"]+)" of the hub at (\S+) `)
	joinLine  = regexp.MustCompile(`^parley join (pj1\.\S+)\n$`)
	onlineRow = regexp.MustCompile(`(?m)^laptop\s+online since `)
)

// Two machines as two real `parley serve` processes on loopback: the hub
// makes a token, the node joins with it and serves, the hub lists it online,
// and a revoke cuts it off.
func TestJoinServeListAndRevokeWithRealDaemons(t *testing.T) {
	// Not parallel: the hub restarts on the port it was given, which a
	// test beside it could be handed meanwhile.
	bin := testkit.ParleyBinary(t)
	hubEnv, nodeEnv := machineEnv(t), machineEnv(t)
	hubData, nodeData := filepath.Join(t.TempDir(), "hub"), filepath.Join(t.TempDir(), "node")

	hub := startServe(t, bin, hubEnv, "--data", hubData, "--cluster-listen", "127.0.0.1:0")
	natsAddr := hub.line(t, hubLine)[1]

	jt := exec.Command(bin, "join-token", "--data", hubData, "--name", "laptop", "--ttl", "2m")
	jt.Env = hubEnv
	out, err := jt.Output()
	m := joinLine.FindStringSubmatch(string(out))
	if err != nil || m == nil {
		t.Fatalf("parley join-token: %q %v, want one line `parley join <token>`", out, err)
	}
	token := m[1]
	if out, err := run(t, bin, hubEnv, "join-token", "--data", hubData, "--ttl", "48h"); err == nil || !strings.Contains(out, "out of range") {
		t.Errorf("join-token --ttl 48h: %q %v, want out of range", out, err)
	}

	out2, err := run(t, bin, nodeEnv, "join", token, "--data", nodeData)
	if err != nil || !strings.Contains(out2, `as node "laptop"`) {
		t.Fatalf("parley join: %s %v", out2, err)
	}
	cfgText, err := os.ReadFile(filepath.Join(nodeEnv[1][len("XDG_CONFIG_HOME="):], "parley", "config.toml"))
	if err != nil || !strings.Contains(string(cfgText), `hub = "`+natsAddr+`"`) || !strings.Contains(string(cfgText), `node = "laptop"`) {
		t.Fatalf("the node's config after join: %q %v", cfgText, err)
	}
	if out, err := run(t, bin, nodeEnv, "join", token, "--data", filepath.Join(t.TempDir(), "again")); err == nil || !strings.Contains(out, "the hub refused to join") {
		t.Fatalf("the token used a second time: %s, want refused", out)
	}

	node := startServe(t, bin, nodeEnv, "--data", nodeData)
	if got := node.line(t, nodeLine); got[1] != "laptop" || got[2] != natsAddr {
		t.Fatalf("the node says %q, want node laptop of %s", got[0], natsAddr)
	}
	// The node's own dashboard answers as before.
	if resp, err := http.Get("http://" + node.addr + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("the node's own /healthz: %v %v", resp, err)
	}

	var list string
	testkit.Eventually(t, 30*time.Second, func() bool {
		if list, err = run(t, bin, hubEnv, "nodes", "--data", hubData); err != nil {
			t.Fatalf("parley nodes: %s", list)
		}
		return onlineRow.MatchString(list)
	}, "parley nodes never showed laptop online:\n%s", testkit.Later(func() any { return list }))
	if body := metrics(t, bin, hubEnv, hubData, hub.addr); !strings.Contains(body, `parley_cluster_node_online{node="laptop"} 1`) {
		t.Errorf("the hub's /metrics lacks laptop online:\n%s", grepLines(body, "parley_cluster"))
	}
	if body := metrics(t, bin, nodeEnv, nodeData, node.addr); !strings.Contains(body, `parley_cluster_link_up{node="laptop"} 1`) {
		t.Errorf("the node's /metrics lacks its link up:\n%s", grepLines(body, "parley_cluster"))
	}

	// kill -9 the hub and start it again on the same listener: the node, its
	// key and its record are still there, and the node's link comes back by itself.
	hub.cmd.Process.Kill()
	hub.cmd.Wait()
	hub = startServe(t, bin, hubEnv, "--data", hubData, "--cluster-listen", natsAddr)
	if got := hub.line(t, hubLine)[1]; got != natsAddr {
		t.Fatalf("the restarted hub listens on %s, want %s", got, natsAddr)
	}
	restarted := time.Now()
	var listed []byte
	testkit.Eventually(t, 60*time.Second, func() bool {
		nodesCmd := exec.Command(bin, "nodes", "--json", "--data", hubData)
		nodesCmd.Env = hubEnv
		var err error
		listed, err = nodesCmd.Output()
		if err != nil {
			t.Fatalf("parley nodes --json: %v", err)
		}
		var nodes []struct {
			Name     string    `json:"name"`
			Online   bool      `json:"online"`
			LastSeen time.Time `json:"last_seen"`
		}
		if err := json.Unmarshal(listed, &nodes); err != nil {
			t.Fatalf("parley nodes --json: %v\n%s", err, listed)
		}
		if len(nodes) != 1 || nodes[0].Name != "laptop" {
			t.Fatalf("after the hub's restart: %s, want laptop alone", listed)
		}
		if nodes[0].Online && nodes[0].LastSeen.After(restarted) {
			t.Logf("the node was back online %v after the restarted hub listened", time.Since(restarted).Round(time.Millisecond))
			return true
		}
		return false
	}, "the node did not come back to the restarted hub: %s", testkit.Later(func() any { return string(listed) }))

	if out, err := run(t, bin, hubEnv, "nodes", "revoke", "laptop", "--data", hubData); err != nil {
		t.Fatalf("parley nodes revoke: %s", out)
	}
	if list, _ := run(t, bin, hubEnv, "nodes", "--data", hubData); strings.Contains(list, "laptop") {
		t.Errorf("after revoke, parley nodes still lists laptop:\n%s", list)
	}
	// The node hears its connection close (the hub closed it before revoke answered).
	var body string
	testkit.Eventually(t, 30*time.Second, func() bool {
		body = metrics(t, bin, nodeEnv, nodeData, node.addr)
		return strings.Contains(body, `parley_cluster_link_up{node="laptop"} 0`)
	}, "the revoked node's /metrics does not show its link down:\n%s", testkit.Later(func() any { return grepLines(body, "parley_cluster") }))
	// The node keeps serving its own dashboard.
	if resp, err := http.Get("http://" + node.addr + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("the revoked node's own /healthz: %v %v", resp, err)
	}

	// A revoked node comes back only with a new token (a new key), then a restart.
	if out, err := run(t, bin, nodeEnv, "join", newToken(t, bin, hubEnv, hubData), "--data", nodeData); err != nil {
		t.Fatalf("joining again after the revoke: %s", out)
	}
	node.cmd.Process.Signal(os.Interrupt)
	node.cmd.Wait()
	startServe(t, bin, nodeEnv, "--data", nodeData).line(t, nodeLine)
	testkit.Eventually(t, 30*time.Second, func() bool {
		if list, err = run(t, bin, hubEnv, "nodes", "--data", hubData); err != nil {
			t.Fatalf("parley nodes: %s", list)
		}
		return onlineRow.MatchString(list)
	}, "the node that joined again is not online:\n%s", testkit.Later(func() any { return list }))

}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// newToken makes a join token for laptop and returns it alone.
func newToken(t *testing.T, bin string, env []string, data string) string {
	t.Helper()
	cmd := exec.Command(bin, "join-token", "--data", data, "--name", "laptop")
	cmd.Env = env
	out, err := cmd.Output()
	m := joinLine.FindSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("parley join-token: %q %v", out, err)
	}
	return string(m[1])
}
