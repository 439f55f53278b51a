//go:build e2e

package cluster_test

import (
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/tmuxterm"
)

// A search at the hub covers node b's threads too, answered from b's own
// store (the hub holds none of b's messages), hits named by b's thread at
// the hub; with b stopped the hub's search still answers and says b was not
// searched, and why.
func TestASearchAtTheHubCoversEveryMachine(t *testing.T) {
	r := newRig(t)
	s := r.hub.dial("phone", -1, "")
	s.Send(newThreadMsg("m1", "hello", r.work))
	s.WaitFor(0, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "the first turn")
	var res struct {
		Hits       []chat.SearchHit     `json:"hits"`
		Unsearched []cluster.Unsearched `json:"unsearched"`
	}
	// b's own search finds the message (its store indexes what it commits).
	var own struct{ Hits []chat.SearchHit }
	testkit.Eventually(t, wait, func() bool {
		r.node.get("/api/search?q="+url.QueryEscape("hello"), &own)
		return len(own.Hits) > 0
	}, "b's own search finds the message")
	r.hub.get("/api/search?q="+url.QueryEscape("hello"), &res)
	// Each of b's own hits is at the hub, under b's thread there (b may
	// have indexed more of the answer meanwhile: nothing else).
	at := map[chat.SearchHit]bool{}
	for _, h := range res.Hits {
		if node, _, ok := cluster.SplitRemoteID(h.Thread); !ok || node != "b" {
			t.Fatalf("a hit at the hub in %q, want b's thread: %+v", h.Thread, res.Hits)
		}
		at[h] = true
	}
	for _, h := range own.Hits {
		h.Thread = cluster.RemoteID("b", h.Thread)
		if !at[h] || len(res.Unsearched) != 0 {
			t.Fatalf("the hub's search: %+v, want each of b's own hits %+v", res, own.Hits)
		}
	}
	r.node.stop()
	r.waitOnline(false)
	res.Hits, res.Unsearched = nil, nil
	r.hub.get("/api/search?q="+url.QueryEscape("hello"), &res)
	if len(res.Hits) != 0 || len(res.Unsearched) != 1 || res.Unsearched[0] != (cluster.Unsearched{Node: "b", Reason: "offline"}) {
		t.Fatalf("the hub's search with b stopped: %+v, want no hit and b offline", res)
	}
	// `parley threads --search` at the hub says so too.
	cmd := exec.Command(testkit.ParleyBinary(t), "threads", "--search", "hello", "--server", "http://"+r.hub.d.Addr(), "--token", r.hub.d.Token())
	cmd.Env = append(os.Environ(), "PARLEY_CONFIG="+filepath.Join(t.TempDir(), "none.toml"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if out, err := cmd.Output(); err != nil || !strings.Contains(stderr.String(), "machine b not searched: offline") {
		t.Fatalf("parley threads --search at the hub: %v\n%s\nstderr: %s", err, out, stderr.String())
	}
	// And `parley chat` at the hub, in a real terminal: its search (the
	// thread picker's /) says which machine it could not ask.
	tm := tmuxterm.Start(t, []string{"NO_COLOR=1"}, testkit.ParleyBinary(t), "chat", "--server", "http://"+r.hub.d.Addr(), "--token", r.hub.d.Token(), "--chat", "terminal")
	tm.WaitScreen("parley chat online", tmuxterm.Has("│ online"))
	tm.Search("hello")
	tm.WaitScreen("b named as not searched", tmuxterm.Has(`0 threads found for "hello"`, "not searched: b (offline)"))
}
