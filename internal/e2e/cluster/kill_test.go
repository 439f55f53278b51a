package cluster_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

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

var loginLink = regexp.MustCompile(`http://(127\.0\.0\.1:\d+)/login\?code=`)

// nodeProc is a machine as a real `parley serve` process.
type nodeProc struct {
	t    *testing.T
	name string // in the log ("node b" when "")
	args []string
	cmd  *exec.Cmd
	addr string
}

func (p *nodeProc) start() {
	p.t.Helper()
	p.cmd = exec.Command(p.args[0], p.args[1:]...)
	p.cmd.Dir = p.t.TempDir()
	stdout, _ := p.cmd.StdoutPipe()
	var stderr strings.Builder
	p.cmd.Stderr = &stderr
	if err := p.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	cmd, name := p.cmd, p.name
	if name == "" {
		name = "node b"
	}
	p.t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
		if p.t.Failed() {
			p.t.Logf("%s's stderr:\n%s", name, stderr.String())
		}
	})
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if m := loginLink.FindStringSubmatch(sc.Text()); m != nil {
			p.addr = m[1]
			go func() {
				for sc.Scan() {
				}
			}()
			return
		}
	}
	p.t.Fatalf("%s printed no link; stderr:\n%s", name, stderr.String())
}

// Node b, a real process, is killed with kill -9 in the middle of a turn;
// three messages are sent from the hub while it is gone. Each says it waits
// for machine b; after b's restart each is in b's log once, the cut turn
// ends with a reason, and the log has no gap.
func TestAKilledNodeGetsItsWaitingMessagesOnce(t *testing.T) {
	a := newAgentSetup(t)
	bin := testkit.ParleyBinary(t)
	root, home, work := a.root, a.home, a.work
	var envLines []string
	for k, v := range a.env {
		envLines = append(envLines, strconv.Quote(k)+" = "+strconv.Quote(v))
	}
	hubCfg := config.Default(filepath.Join(root, "hub"), work)
	hubCfg.Addr = "127.0.0.1:0"
	hubCfg.Cluster.Listen, hubCfg.Cluster.Node = "127.0.0.1:0", "hub"
	if err := hubCfg.Validate(); err != nil {
		t.Fatal(err)
	}
	hub := &machine{t: t, cfg: hubCfg}
	hub.start()
	t.Cleanup(hub.stop)
	addr := hub.d.ClusterHub().Addr()
	tok, err := cluster.IssueToken(hubCfg.DataDir, addr, "b", time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	nodeData := filepath.Join(root, "b")
	if err := os.MkdirAll(nodeData, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.Join(t.Context(), nodeData, tok, "b", "test"); err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(root, "b.toml")
	cfgText := fmt.Sprintf(`addr = "127.0.0.1:0"
roots = [%q]

[[agent]]
id = "claude"
transport = "stream"
command = %q
env = { %s }

[cluster]
hub = %q
node = "b"
heartbeat = "2s"
`, work, testkit.ClaudeBin(t), strings.Join(envLines, ", "), addr)
	if err := os.WriteFile(cfgFile, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	node := &nodeProc{t: t, args: []string{bin, "serve", "--data", nodeData, "--config", cfgFile}}
	node.start()
	r := &rig{hub: hub, work: work}
	r.waitOnline(true)

	s := hub.dial("phone", -1, "")
	s.Send(newThreadMsg("m1", "hello", work))
	s.WaitFor(0, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "the first turn")
	from := s.Len()
	s.Send(chatsock.Msg("m2", "slowly"))
	s.WaitFor(from, wait, chatsock.Type(chat.TypeAgentChunk), "the slow turn streaming")
	if err := node.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	node.cmd.Wait()
	for _, pid := range testkit.PIDsWithEnv("HOME="+home, "claude") {
		syscall.Kill(pid, syscall.SIGKILL) // the agent the killed daemon left
	}
	from = s.Len()
	for i := 1; i <= 3; i++ {
		id := fmt.Sprintf("w%d", i)
		s.Send(chatsock.Msg(id, "remember "+id))
		j := s.WaitFor(from, wait, chatsock.Delivery(id, chat.DeliveryQueued), id+" queued")
		if d := fmt.Sprint(chatsock.FieldOf(s.Get(j), "detail")); d != "waits for machine b" {
			t.Fatalf("%s: receipt detail %q", id, d)
		}
	}
	node.start()
	for i := 1; i <= 3; i++ {
		s.WaitFor(from, 2*wait, chatsock.PromptDone(fmt.Sprintf("w%d", i), chat.StopEndTurn), "a waiting message's turn")
	}

	ti := s.WaitFor(0, wait, func(e client.Event) bool { return shownThread(e) != "" }, "the route's thread")
	_, local, _ := cluster.SplitRemoteID(shownThread(s.Get(ti)))
	token, err := auth.LoadOrCreate(nodeData)
	if err != nil {
		t.Fatal(err)
	}
	b := &machine{t: t}
	var log struct {
		Events []struct {
			Type       string `json:"type"`
			Seq        int64  `json:"seq"`
			Text       string `json:"text"`
			MessageID  string `json:"message_id"`
			StopReason string `json:"stop_reason"`
		} `json:"events"`
	}
	b.getAt(node.addr, token, "/api/threads/"+string(local)+"/events?since=0", &log)
	seen := map[string]int{}
	var last int64
	m2Ended := false
	for _, e := range log.Events {
		if e.Seq != last+1 {
			t.Fatalf("b's log jumps from %d to %d", last, e.Seq)
		}
		last = e.Seq
		if e.Type == chat.TypeUserMessage {
			seen[e.Text]++
		}
		if e.Type == chat.TypePromptDone && e.MessageID == "m2" {
			m2Ended = true
		}
	}
	for i := 1; i <= 3; i++ {
		if k := seen[fmt.Sprintf("remember w%d", i)]; k != 1 {
			t.Fatalf("w%d in b's log %d times, want once (%v)", i, k, seen)
		}
	}
	if !m2Ended {
		t.Fatal("the turn cut by the kill has no end in b's log")
	}
	// `parley threads` against the hub names the machine.
	cmd := exec.Command(bin, "threads", "--server", "http://"+hub.d.Addr(), "--token", hub.d.Token())
	cmd.Env = append(os.Environ(), "PARLEY_CONFIG="+filepath.Join(root, "none.toml"))
	out, err := cmd.CombinedOutput()
	if err != nil || !regexp.MustCompile(`(?m)^MACHINE\s+ID\s.*\n^b\s+`+regexp.QuoteMeta(string(cluster.RemoteID("b", local)))+`\s+claude\s`).Match(out) {
		t.Fatalf("parley threads at the hub: %v\n%s", err, out)
	}
}

// The real parley binary is built once for the package and removed after.
func TestMain(m *testing.M) { testkit.RunAndRemoveBinary(m) }
