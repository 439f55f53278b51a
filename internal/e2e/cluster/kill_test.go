//go:build e2e

package cluster_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"syscall"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/pushchild"
	"github.com/parleyhq/parley/internal/testkit/relay"
)

var loginLink = regexp.MustCompile(`http://(127\.0\.0\.1:\d+)/login\?code=`)

// nodeProc is a machine as a real `parley serve` process.
type nodeProc struct {
	t    *testing.T
	name string // in the log ("node b" when "")
	args []string
	// pushes runs args[1:] as this test binary pushing to the Web Push
	// stand-in (testkit/pushchild), not args[0].
	pushes bool
	cmd    *exec.Cmd
	addr   string
}

func (p *nodeProc) start() {
	p.t.Helper()
	if p.pushes {
		p.cmd = pushchild.Command(context.Background(), p.args[1:]...)
	} else {
		p.cmd = exec.Command(p.args[0], p.args[1:]...)
	}
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
	hub, nodes := startProcs(t, a, "b")
	node := nodes["b"]

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
	// A new thread on b, which just died (its heartbeat still looks
	// current): refused at once with the reason, nothing kept for later
	// (a first message applied later made a thread no chat was attached
	// to, its sender told only "queued").
	desk := hub.dial("desk", -1, "")
	desk.Send(newThreadMsg("n1", "remember n1", work))
	j := desk.WaitFor(0, wait, func(e client.Event) bool {
		return e.Type == chat.TypeError && chatsock.FieldOf(e, "ref") == "n1"
	}, "the new thread on the dead b refused")
	if msg := fmt.Sprint(chatsock.FieldOf(desk.Get(j), "message")); !strings.Contains(msg, "machine b") {
		t.Fatalf("the new thread on the dead b was refused with %q, want the machine named", msg)
	}
	for _, pid := range testkit.PIDsWithEnv("HOME="+home, "claude") {
		syscall.Kill(pid, syscall.SIGKILL) // the agent the killed daemon left
	}
	from = s.Len()
	sendWhileAway(t, s)
	node.start()
	for i := 1; i <= 3; i++ {
		s.WaitFor(from, 2*wait, chatsock.PromptDone(fmt.Sprintf("w%d", i), chat.StopEndTurn), "a waiting message's turn")
	}

	ti := s.WaitFor(0, wait, func(e client.Event) bool { return shownThread(e) != "" }, "the route's thread")
	_, local, _ := cluster.SplitRemoteID(shownThread(s.Get(ti)))
	events, seen := gaplessLog(t, node.get, local)
	eachOnce(t, seen)
	m2Ended := false
	for _, e := range events {
		if e.Type == chat.TypePromptDone && e.MessageID == "m2" {
			m2Ended = true
		}
	}
	if !m2Ended {
		t.Fatal("the turn cut by the kill has no end in b's log")
	}
	// The refused new thread was never made on b, nor shown as waiting.
	var bThreads struct {
		Threads []chat.Thread `json:"threads"`
	}
	node.get("/api/threads", &bThreads)
	if len(bThreads.Threads) != 1 {
		t.Fatalf("b has %d threads, want only the first (the refused new one never made): %+v", len(bThreads.Threads), bThreads.Threads)
	}
	for _, e := range desk.Snapshot() {
		if e.Type == chat.TypeDelivery && chatsock.FieldOf(e, "message_id") == "n1" {
			t.Fatalf("the refused new thread's message has a receipt: %s", e.Raw)
		}
	}
	// `parley threads` against the hub names the machine.
	cmd := exec.Command(bin, "threads", "--server", "http://"+hub.addr, "--token", hub.token)
	cmd.Env = append(os.Environ(), "PARLEY_CONFIG="+filepath.Join(root, "none.toml"))
	out, err := cmd.CombinedOutput()
	if err != nil || !regexp.MustCompile(`(?m)^MACHINE\s+ID\s.*\n^b\s+`+regexp.QuoteMeta(string(cluster.RemoteID("b", local)))+`\s+claude\s`).Match(out) {
		t.Fatalf("parley threads at the hub: %v\n%s", err, out)
	}
}

// The real parley binary is built once for the package and removed after.
func TestMain(m *testing.M) {
	relay.Main()     // the benchmark's agent: this binary, relaying to Claude Code
	pushchild.Main() // a hub that pushes to the Web Push stand-in: this binary
	testkit.RunAndRemoveBinary(m)
}
