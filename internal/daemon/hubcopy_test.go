package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/scriptd"
)

// logOf is a socket's sequenced events in the order they came, each frame
// without its thread field (a machine names its thread by its own id, the
// hub by its remote one): two views of one log must be equal.
func logOf(t *testing.T, evs []client.Event) []string {
	t.Helper()
	var out []string
	for _, e := range evs {
		if e.Seq == 0 {
			continue
		}
		out = append(out, withoutThread(t, e.Raw))
	}
	return out
}

func withoutThread(t *testing.T, raw []byte) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "thread")
	b, _ := json.Marshal(m)
	return string(b)
}

// nodeLog is b's own log of its thread, from its REST API.
func nodeLog(t *testing.T, b *scriptd.Rig, id chat.ThreadID) []string {
	t.Helper()
	req, _ := http.NewRequest("GET", b.URL()+"/api/threads/"+string(id)+"/events?since=0", nil)
	req.Header.Set("Authorization", "Bearer "+b.D().Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page struct {
		Events []json.RawMessage `json:"events"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range page.Events {
		out = append(out, withoutThread(t, e))
	}
	return out
}

func sameLog(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// upTo waits until s has shown seq n of its thread: the log as b has it now.
func upTo(s *chatsock.Conn, n int) {
	s.WaitFor(0, 10*time.Second, func(e client.Event) bool { return e.Seq == int64(n) }, fmt.Sprintf("seq %d", n))
}

// replayDone is the socket's replay_done from frame from on.
func replayDone(t *testing.T, s *chatsock.Conn, from int) chat.ReplayDone {
	t.Helper()
	i := s.WaitFor(from, 10*time.Second, chatsock.Type(chat.TypeReplayDone), "the replay")
	var d chat.ReplayDone
	if err := s.Get(i).Decode(&d); err != nil {
		t.Fatal(err)
	}
	return d
}

// A node's thread at the hub while its machine is away (node b stopped):
// a socket opened at the hub replays the thread from the hub's copy, equal
// to b's log, and its replay_done says it is the hub's copy and since when
// b is offline. b comes back: a new turn's events follow on the same
// socket with no gap and nothing twice, and a fresh replay is b's own log.
// The hub and b are two daemons over real NATS, the scripted agent on b.
func TestAnAwayNodesThreadIsReadAtTheHubFromItsCopy(t *testing.T) {
	t.Parallel()
	hub := startDaemon(t, func(cfg *config.Config) {
		cfg.Cluster.Node, cfg.Cluster.Listen = "hub", "127.0.0.1:0"
	})
	h := hub.d.ClusterHub()
	addr := h.Addr()
	b := scriptd.Start(t, joinedAs(t, "b", hub.cfg.DataDir, addr))
	online := func(want bool) {
		t.Helper()
		testkit.Eventually(t, 10*time.Second, func() bool {
			nodes, err := h.Nodes(context.Background())
			return err == nil && len(nodes) == 1 && nodes[0].Online == want
		}, "b online at the hub: "+map[bool]string{true: "yes", false: "no"}[want])
	}
	online(true)

	s := hub.dial("desk", -1)
	s.WaitFor(0, 10*time.Second, chatsock.Type(chat.TypeReplayDone), "ready")
	s.Send(map[string]any{"type": "message", "message_id": "m1", "text": "say hi",
		"intent": map[string]any{"new": map[string]any{"cwd": b.Work, "node": "b"}}})
	s.WaitFor(0, 10*time.Second, chatsock.PromptDone("m1", chat.StopEndTurn), "the first turn on b")
	s.Send(chatsock.Msg("m2", "say two"))
	s.WaitFor(0, 10*time.Second, chatsock.PromptDone("m2", chat.StopEndTurn), "the second turn on b")
	var remote chat.ThreadID
	for _, e := range s.Snapshot() {
		if e.Seq > 0 {
			remote = e.Thread
		}
	}
	_, local, ok := cluster.SplitRemoteID(remote)
	if !ok {
		t.Fatalf("the hub's socket shows %q, want a thread of b's", remote)
	}
	before := nodeLog(t, b, local)
	upTo(s, len(before))
	if got := logOf(t, s.Snapshot()); !sameLog(got, before) || len(before) < 6 {
		t.Fatalf("the hub showed %d events, b's log has %d", len(got), len(before))
	}

	b.Down() // b goes away: offline at the hub at once
	online(false)
	nodes, err := h.Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	away := hub.dial("desk", 0)
	done := replayDone(t, away, 0)
	if got := logOf(t, away.Snapshot()); !sameLog(got, before) {
		t.Fatalf("a socket at the hub while b is away replays %d events:\n%q\nwant b's log from the hub's copy (%d):\n%q",
			len(got), got, len(before), before)
	}
	if !done.FromCopy || !done.OfflineSince.Equal(nodes[0].LastSeen) || done.LastSeq != int64(len(before)) {
		t.Fatalf("replay_done %+v: want from the hub's copy, b offline since %v, last seq %d", done, nodes[0].LastSeen, len(before))
	}

	b.Up()
	online(true)
	away.Send(chatsock.Msg("m3", "say three"))
	away.WaitFor(0, 10*time.Second, chatsock.PromptDone("m3", chat.StopEndTurn), "a turn on b once it is back")
	after := nodeLog(t, b, local)
	upTo(away, len(after))
	if got := logOf(t, away.Snapshot()); !sameLog(got, after) {
		t.Fatalf("the socket that replayed the copy shows %d events once b is back:\n%q\nwant b's log, no gap, nothing twice (%d):\n%q",
			len(got), got, len(after), after)
	}
	fresh := hub.dial("desk", 0)
	if d := replayDone(t, fresh, 0); d.FromCopy || !sameLog(logOf(t, fresh.Snapshot()), after) {
		t.Fatalf("a fresh replay once b is back (%+v): %q\nwant b's own log:\n%q", d, logOf(t, fresh.Snapshot()), after)
	}
}
