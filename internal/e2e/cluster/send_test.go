//go:build e2e

package cluster_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/testkit"
)

// `parley send --agent AGENT@MACHINE` at the hub: the first send starts a
// thread on that machine (its answer printed as it streams), the next one
// from the same terminal goes to that thread, and AGENT@HUB starts one on
// the hub itself, leaving the terminal's thread where it was. A machine
// with no such agent is refused with the reason, and nothing is sent.
func TestParleySendReachesAnAgentOnAnotherMachine(t *testing.T) {
	r := newRig(t)
	bin := testkit.ParleyBinary(t)
	send := func(args ...string) (string, string, error) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"send", "--server", "http://" + r.hub.d.Addr(), "--token", r.hub.d.Token(), "--chat", "term"}, args...)...)
		cmd.Env = append(os.Environ(), "PARLEY_CONFIG="+filepath.Join(t.TempDir(), "none.toml"))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		return string(out), stderr.String(), err
	}
	threads := func() []chat.Thread {
		var list struct{ Threads []chat.Thread }
		r.hub.getAt(r.hub.d.Addr(), r.hub.d.Token(), "/api/threads", &list)
		return list.Threads
	}

	if out, stderr, err := send("--agent", "claude@b", "hello"); err != nil || !strings.Contains(out, answer) {
		t.Fatalf("parley send --agent claude@b: %v\nstdout: %s\nstderr: %s", err, out, stderr)
	}
	ths := threads()
	if len(ths) != 1 || ths[0].Node != "b" || ths[0].Agent != "claude" || ths[0].Cwd != r.work {
		t.Fatalf("after the first send the hub lists %+v, want one thread of claude on b in %s", ths, r.work)
	}
	first, firstSeq := ths[0].ID, ths[0].LastSeq
	if node, _, ok := cluster.SplitRemoteID(first); !ok || node != "b" {
		t.Fatalf("the thread %q is not b's", first)
	}

	if out, stderr, err := send("--agent", "claude@b", "hello"); err != nil || !strings.Contains(out, answer) {
		t.Fatalf("the second send: %v\nstdout: %s\nstderr: %s", err, out, stderr)
	}
	if ths := threads(); len(ths) != 1 || ths[0].ID != first || ths[0].LastSeq <= firstSeq {
		t.Fatalf("after the second send the hub lists %+v, want b's thread alone, written again", ths)
	}

	if out, stderr, err := send("--agent", "claude@hub", "hello"); err != nil || !strings.Contains(out, answer) {
		t.Fatalf("parley send --agent claude@hub: %v\nstdout: %s\nstderr: %s", err, out, stderr)
	}
	ths = threads()
	var onHub int
	for _, th := range ths {
		if th.Node == "" && th.Agent == "claude" {
			onHub++
		}
	}
	if len(ths) != 2 || onHub != 1 {
		t.Fatalf("after claude@hub the hub lists %+v, want b's thread and one on the hub", ths)
	}
	var route struct{ Thread chat.ThreadID }
	r.hub.getAt(r.hub.d.Addr(), r.hub.d.Token(), "/api/route?channel=tui&chat=term", &route)
	if route.Thread != first {
		t.Fatalf("the terminal's route shows %q after the sends, want b's thread %q (a send never moves it)", route.Thread, first)
	}

	if _, stderr, err := send("--agent", "gemini@b", "hello"); err == nil || !strings.Contains(stderr, `machine "b" has no agent "gemini"`) {
		t.Fatalf("--agent gemini@b: %v %s, want refused: b has no such agent", err, stderr)
	}
	if len(threads()) != 2 {
		t.Fatal("a refused send made a thread")
	}
}
