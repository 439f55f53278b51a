//go:build e2e

// Package cluster_test runs a hub and a node as two real daemons with their
// own data directories on loopback, linked by the real embedded NATS server
// with TLS, the node running the real Claude Code (stream) against the
// scripted Messages API; a person drives the node's thread from the hub's
// chat socket.
package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/daemon"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/stream"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
	"github.com/parleyhq/parley/internal/testkit/tmuxterm"
)

const wait = 30 * time.Second

const answer = "Hello from the scripted model, in pieces."

func scenario() claudeapi.Scenario {
	return claudeapi.Scenario{Rules: []claudeapi.Rule{
		{Match: claudeapi.Match{Exact: "hello"}, Reply: claudeapi.Text(answer, 5, 5*time.Millisecond)},
		{Match: claudeapi.Match{Exact: "make the file"}, Reply: claudeapi.Bash("echo parley-$((6*7)) && touch made-by-bash", "Make a file")},
		{Match: claudeapi.Match{Exact: "touch it"}, Reply: claudeapi.Bash("touch made-by-rule", "Make a file")},
		{Match: claudeapi.Match{ToolResult: "Bash"}, Reply: claudeapi.Text("The command ran.", 1, 0)},
		{Match: claudeapi.Match{Exact: "slowly"}, Reply: claudeapi.Text(strings.Repeat("tick ", 400), 400, 50*time.Millisecond)},
		{Match: claudeapi.Match{Prefix: "remember"}, Reply: claudeapi.Text("Noted.", 1, 0)},
		{Match: claudeapi.Match{Exact: "tell the person"}, Reply: claudeapi.ToolUse("mcp__parley__notify_person",
			map[string]any{"text": "The build is green.", "level": "done"})},
		{Match: claudeapi.Match{Exact: "tell them again"}, Reply: claudeapi.ToolUse("mcp__parley__notify_person",
			map[string]any{"text": "The deploy is done.", "level": "done"})},
		{Match: claudeapi.Match{ToolResult: "mcp__parley__notify_person"}, Reply: claudeapi.Text("Told them.", 1, 0)},
	}}
}

type machine struct {
	t   testing.TB
	cfg config.Config
	d   *daemon.Daemon
}

func (m *machine) start() {
	m.t.Helper()
	d, err := daemon.Start(context.Background(), m.cfg, daemon.Options{
		Drivers: map[string]driver.Driver{config.TransportStream: stream.New(nil)},
	})
	if err != nil {
		m.t.Fatal(err)
	}
	m.d = d
}

func (m *machine) stop() {
	if m.d == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := m.d.Shutdown(ctx); err != nil {
		m.t.Errorf("shutdown: %v", err)
	}
	m.d = nil
}

func (m *machine) dial(chatID string, since int64, thread chat.ThreadID) *chatsock.Conn {
	m.t.Helper()
	s := chatsock.Dial(m.t, "http://"+m.d.Addr(), m.d.Token(), client.Options{Chat: chatID, Since: since, Thread: thread})
	s.WaitFor(0, wait, chatsock.Type(chat.TypeReplayDone), "replay_done")
	return s
}

// get reads a REST answer of the machine.
func (m *machine) get(path string, v any) {
	m.t.Helper()
	m.getAt(m.d.Addr(), m.d.Token(), path, v)
}

// getAt reads a REST answer of the parley at addr.
func (m *machine) getAt(addr, token, path string, v any) {
	m.t.Helper()
	req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		m.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		m.t.Fatalf("GET %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		m.t.Fatal(err)
	}
}

type rig struct {
	hub, node *machine
	api       *claudeapi.Server
	work      string
}

// agentSetup is what Claude Code on node b needs: the test's root, its
// home and working directory, the scripted API and the agent's environment.
type agentSetup struct {
	root, home, work string
	api              *claudeapi.Server
	env              map[string]string
}

func newAgentSetup(t testing.TB) agentSetup {
	t.Helper()
	testkit.NeedsRealAgent(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a := agentSetup{root: root, home: filepath.Join(root, "home"), work: filepath.Join(root, "work"), env: map[string]string{}}
	for _, d := range []string{a.home, a.work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	a.api = claudeapi.Start(t, scenario())
	for _, kv := range claudeapi.Env(t, a.api, a.home, a.work) {
		k, v, _ := strings.Cut(kv, "=")
		a.env[k] = v
	}
	return a
}

// newRig starts a hub and node "b" joined to it, and waits for b online.
func newRig(t testing.TB) *rig { return newRigWith(t, nil) }

// newRigWith is newRig with the hub's checked config changed first (for
// what the config's ranges do not allow a test to wait for).
func newRigWith(t testing.TB, hubCfg func(*config.Config)) *rig {
	t.Helper()
	return newRigWithConfigs(t, hubCfg, nil)
}

// newRigWithConfigs is newRigWith with node b's checked config changed too.
func newRigWithConfigs(t testing.TB, hubCfg, nodeCfg func(*config.Config)) *rig {
	t.Helper()
	a := newAgentSetup(t)
	root, work, api, env := a.root, a.work, a.api, a.env
	mk := func(name string, mutate func(*config.Cluster)) *machine {
		cfg := config.Default(filepath.Join(root, name), work)
		cfg.Addr = "127.0.0.1:0"
		cfg.Agents = []config.Agent{{ID: "claude", Name: "Claude Code", Transport: config.TransportStream, Command: testkit.ClaudeBin(t), Env: env}}
		cfg.Cluster.Node = name
		// Heartbeats a loaded machine keeps: the hub counts b offline after
		// three missed ones, and an offline b turns a new thread or a stop
		// into "machine b is offline".
		cfg.Cluster.Heartbeat = config.Duration{Duration: 2 * time.Second}
		mutate(&cfg.Cluster)
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		return &machine{t: t, cfg: cfg}
	}
	hub := mk("hub", func(c *config.Cluster) { c.Listen = "127.0.0.1:0" })
	if hubCfg != nil {
		hubCfg(&hub.cfg)
	}
	hub.start()
	t.Cleanup(hub.stop)
	addr := hub.d.ClusterHub().Addr()
	tok, err := cluster.IssueToken(hub.cfg.DataDir, addr, "b", time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	node := mk("b", func(c *config.Cluster) { c.Hub = addr })
	if nodeCfg != nil {
		nodeCfg(&node.cfg)
	}
	if err := os.MkdirAll(node.cfg.DataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.Join(t.Context(), node.cfg.DataDir, tok, "b", "test"); err != nil {
		t.Fatal(err)
	}
	node.start()
	t.Cleanup(node.stop)
	r := &rig{hub: hub, node: node, api: api, work: work}
	r.waitOnline(true)
	return r
}

func (r *rig) waitOnline(want bool) {
	r.hub.t.Helper()
	testkit.Eventually(r.hub.t, wait, func() bool {
		nodes, err := r.hub.d.ClusterHub().Nodes(context.Background())
		return err == nil && len(nodes) == 1 && nodes[0].Online == want
	}, fmt.Sprintf("node b online=%v at the hub", want))
}

// shownThread is the id of the thread a "thread" frame shows.
func shownThread(e client.Event) chat.ThreadID {
	var te chat.ThreadEvent
	if e.Type != chat.TypeThread || e.Decode(&te) != nil {
		return ""
	}
	return te.Thread.ID
}

func newThreadMsg(id, text, cwd string) map[string]any {
	return map[string]any{"type": "message", "message_id": id, "text": text,
		"intent": map[string]any{"new": map[string]any{"cwd": cwd, "node": "b"}}}
}

// seqFrames are a socket's sequenced events with the thread field removed,
// keyed by seq: what two machines' views of one log must agree on.
func seqFrames(t *testing.T, evs []client.Event) map[int64]string {
	t.Helper()
	out := map[int64]string{}
	for _, e := range evs {
		if e.Seq == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(e.Raw, &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "thread")
		b, _ := json.Marshal(m)
		if prev, ok := out[e.Seq]; ok && prev != string(b) {
			t.Fatalf("seq %d twice, different: %s / %s", e.Seq, prev, b)
		}
		out[e.Seq] = string(b)
	}
	return out
}

// A hub and nodes b and c as three `parley serve` processes with their own
// data directories. From the hub's socket: a new thread on node b, a plain
// turn, a permission card both the hub's socket and b's own answer at once
// (one wins, the other is told card_closed), a stop that reaches the turn,
// and a replay through the hub equal to b's own log. Then the thread is
// deleted on b: the hub's views of it close saying so, and neither the
// hub's list nor `parley threads` at the hub has it any more.
func TestANodesThreadDrivenFromTheHub(t *testing.T) {
	a := newAgentSetup(t)
	hub, nodes := startProcs(t, a, "b", "c")
	b, c := nodes["b"], nodes["c"]
	s := hub.dial("phone", -1, "")
	s.Send(newThreadMsg("m1", "hello", a.work))
	at := 0
	for _, st := range []string{chat.DeliveryQueued, chat.DeliveryDelivering, chat.DeliverySubmitted} {
		at = s.WaitFor(at, wait, chatsock.Delivery("m1", st), st)
	}
	end := s.WaitFor(at, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "prompt_done end_turn")
	if got := chatsock.Chunks(s.Snapshot()[at:end]); got != answer {
		t.Fatalf("chunks add up to %q, want %q", got, answer)
	}
	ti := s.WaitFor(0, wait, func(e client.Event) bool { return shownThread(e) != "" }, "the route's thread")
	remoteID := shownThread(s.Get(ti))
	node, local, ok := cluster.SplitRemoteID(remoteID)
	if !ok || node != "b" {
		t.Fatalf("the hub's route shows %q, want a thread of node b", remoteID)
	}
	var list struct {
		Threads []chat.Thread `json:"threads"`
	}
	hub.get("/api/threads", &list)
	if len(list.Threads) != 1 || list.Threads[0].ID != remoteID || list.Threads[0].Node != "b" {
		t.Fatalf("the hub lists %+v, want b's thread with its machine", list.Threads)
	}

	// `parley chat` on b's own terminal (a real process in tmux, b's own
	// server) on the same thread; it and the hub's socket answer the card.
	tm := tmuxterm.Start(t, []string{"NO_COLOR=1"}, testkit.ParleyBinary(t), "chat", "--server", "http://"+b.addr, "--token", b.token, "--chat", "terminal", "--thread", string(local))
	tm.Within = wait
	tm.Tmux("resize-window", "-t", "t", "-x", "160") // a card's resolution on one line
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("b's parley chat at the end:\n%s", tm.Screen())
		}
	})
	tm.WaitScreen("b's parley chat on the thread", tmuxterm.Has("│ online", "Hello from the scripted model"))
	from := s.Len()
	s.Send(chatsock.Msg("m2", "make the file"))
	card := s.WaitFor(from, wait, chatsock.Type(chat.TypePermissionRequest), "the card at the hub")
	tm.WaitScreen("the card in b's parley chat", tmuxterm.Has("Permission:", "Or type what to do instead"))
	rid := fmt.Sprint(chatsock.FieldOf(s.Get(card), "request_id"))
	// b's terminal answers (Allow once); the hub's socket answers as soon as
	// the terminal has taken the key, while its answer is on its way (the
	// answer is sent only from a card still open: a key the terminal read
	// after a resolution would answer nothing).
	tm.Keys("1")
	tm.WaitScreen("b's terminal answered", func(s string) bool {
		return strings.Contains(s, "sent; waiting for the agent") || !strings.Contains(s, "Or type what to do instead")
	})
	s.Send(map[string]any{"type": "permission_response", "request_id": rid, "option_id": chat.OptionAllowOnce})
	s.WaitFor(card, wait, chatsock.PromptDone("m2", chat.StopEndTurn), "the tool's turn done at the hub")
	tm.WaitScreen("the card resolved in b's parley chat", tmuxterm.HasFlat("Allow once (by"))
	closedAtHub := func() int {
		k := 0
		for _, e := range s.Snapshot()[card:] {
			if e.Type == chat.TypeError && chatsock.FieldOf(e, "code") == chat.CodeCardClosed {
				k++
			}
		}
		return k
	}
	closedOnB := func() int {
		if strings.Contains(tmuxterm.Flat(tm.Screen()), "that card was already answered or cancelled elsewhere") {
			return 1
		}
		return 0
	}
	testkit.Eventually(t, wait, func() bool { return closedAtHub()+closedOnB() == 1 }, "exactly one card_closed between the hub's socket and b's parley chat")
	// The winner's resolution names it: b's terminal (tui) or the hub.
	if won := strings.Contains(tmuxterm.Flat(tm.Screen()), "Allow once (by tui)"); won != (closedAtHub() == 1) {
		t.Fatalf("b's parley chat shows its answer won: %v, the hub's socket told card_closed %d times", won, closedAtHub())
	}
	if _, err := os.Stat(filepath.Join(a.work, "made-by-bash")); err != nil {
		t.Fatalf("the tool did not run on the node: %v", err)
	}

	// Stop from the hub reaches the node's turn.
	from = s.Len()
	s.Send(chatsock.Msg("m3", "slowly"))
	s.WaitFor(from, wait, chatsock.Type(chat.TypeAgentChunk), "streaming")
	s.Send(map[string]any{"type": "stop"})
	s.WaitFor(from, wait, chatsock.PromptDone("m3", chat.StopCancelled), "cancelled by the hub's stop")

	// since: the hub's replay of the whole log equals b's own, up to the
	// stop's prompt_done (b's last event the test knows of). Both sockets
	// stay live: each is read once it has reached that seq, since the hub
	// hears b's log a moment after b writes it.
	viaHub := hub.dial("phone", 0, remoteID)
	// b's own log, read on the route b's parley chat shows.
	own := chatsock.Dial(t, "http://"+b.addr, b.token, client.Options{Chat: "terminal", Channel: "tui", Since: 0, Thread: local})
	own.WaitFor(0, wait, chatsock.Type(chat.TypeReplayDone), "replay_done on b")
	last := own.Get(own.WaitFor(0, wait, chatsock.PromptDone("m3", chat.StopCancelled), "the node saw the stop")).Seq
	if last == 0 {
		t.Fatal("the stop's prompt_done at the node has no seq")
	}
	upTo := func(c *chatsock.Conn) map[int64]string {
		var log map[int64]string
		testkit.Eventually(t, wait, func() bool {
			log = seqFrames(t, c.Snapshot())
			_, ok := log[last]
			return ok
		}, fmt.Sprintf("the replay reaches seq %d", last))
		for seq := range log {
			if seq > last {
				delete(log, seq)
			}
		}
		return log
	}
	hubLog, nodeLog := upTo(viaHub), upTo(own)
	if len(nodeLog) < 10 || len(hubLog) != len(nodeLog) {
		t.Fatalf("replay through the hub: %d events, b's own: %d", len(hubLog), len(nodeLog))
	}
	for seq, f := range nodeLog {
		if hubLog[seq] != f {
			t.Fatalf("seq %d through the hub %s, on b %s", seq, hubLog[seq], f)
		}
	}
	// The thread's usage at the hub is b's.
	var atHub, onB struct {
		Thread chat.Thread      `json:"thread"`
		Usage  chat.UsageTotals `json:"usage"`
	}
	hub.get("/api/threads/"+string(remoteID), &atHub)
	b.get("/api/threads/"+string(local), &onB)
	if atHub.Usage.Turns == 0 || atHub.Usage != onB.Usage || atHub.Thread.ID != remoteID {
		t.Fatalf("usage at the hub %+v (thread %s), on b %+v", atHub.Usage, atHub.Thread.ID, onB.Usage)
	}
	// c, the third machine, holds nothing of b's thread.
	var onC struct {
		Threads []chat.Thread `json:"threads"`
	}
	c.get("/api/threads", &onC)
	if len(onC.Threads) != 0 {
		t.Fatalf("c lists %+v, want none of b's threads", onC.Threads)
	}

	// Deleted on b: it leaves the hub.
	if out := threadsAt(t, hub.addr, hub.token); !strings.Contains(out, string(remoteID)) {
		t.Fatalf("parley threads at the hub, before the delete:\n%s", out)
	}
	deleteAt(t, b.addr, b.token, local)
	for _, v := range []*chatsock.Conn{s, viaHub} {
		if why := closedFor(t, v, "the hub's view of the deleted thread closed"); why != reasonDeleted {
			t.Fatalf("the hub's view closed saying %q, want %q", why, reasonDeleted)
		}
	}
	hub.get("/api/threads", &list)
	if len(list.Threads) != 0 {
		t.Fatalf("b deleted its thread, the hub lists %+v", list.Threads)
	}
	if out := threadsAt(t, hub.addr, hub.token); strings.Contains(out, string(remoteID)) {
		t.Fatalf("parley threads at the hub still lists the deleted thread:\n%s", out)
	}
	again := hub.dial("phone", -1, "")
	for _, e := range again.Snapshot() {
		if id := shownThread(e); id != "" {
			t.Fatalf("the route that showed the deleted thread shows %s", id)
		}
	}
}

// Messages sent from the hub while the node is away wait at the hub, say
// so, and are each delivered once when it is back: the node's log has each
// person's message once and no gap.
func TestMessagesForAnOfflineNodeWaitAndAreDeliveredOnce(t *testing.T) {
	r := newRig(t)
	s := r.hub.dial("phone", -1, "")
	s.Send(newThreadMsg("m1", "hello", r.work))
	s.WaitFor(0, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "the first turn")
	r.node.stop()
	r.waitOnline(false)
	from := s.Len()
	sendWhileAway(t, s)
	// A new connection of the route, whose thread's machine is away: it
	// connects (showing the hub's copy of the thread), rather than fail.
	other := r.hub.dial("phone", -1, "")
	other.Client().Close()
	r.node.start()
	for i := 1; i <= 3; i++ {
		s.WaitFor(from, 2*wait, chatsock.PromptDone(fmt.Sprintf("w%d", i), chat.StopEndTurn), "a waiting message's turn")
	}
	ti := s.WaitFor(0, wait, func(e client.Event) bool { return shownThread(e) != "" }, "the route's thread")
	_, local, _ := cluster.SplitRemoteID(shownThread(s.Get(ti)))
	_, seen := gaplessLog(t, r.node.get, local)
	eachOnce(t, seen)
}

// A message that waited at the hub longer than input_wait for its machine
// fails, and the person who sent it sees that at once, while the machine is
// still away: the failed receipt with the reason on the socket that sent
// it. It stays in the thread: once the machine is back, a reload of the
// route shows it failed, with the reason, though b's own log never held it.
func TestAMessageThatWaitedTooLongFailsInItsThreadWithTheReason(t *testing.T) {
	const inputWait = 2 * time.Second
	r := newRigWith(t, func(c *config.Config) { c.Cluster.InputWait = config.Duration{Duration: inputWait} })
	s := r.hub.dial("phone", -1, "")
	s.Send(newThreadMsg("m1", "hello", r.work))
	s.WaitFor(0, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "the first turn")
	remoteID := shownThread(s.Get(s.WaitFor(0, wait, func(e client.Event) bool { return shownThread(e) != "" }, "the route's thread")))
	r.node.stop()
	r.waitOnline(false)
	from := s.Len()
	s.Send(chatsock.Msg("w1", "remember w1"))
	s.WaitFor(from, wait, chatsock.Delivery("w1", chat.DeliveryQueued), "w1 queued")
	want := "machine b did not take it within " + inputWait.String()
	j := s.WaitFor(from, 2*wait, chatsock.Delivery("w1", chat.DeliveryFailed), "w1 failed, on the socket that sent it, b still away")
	if d := fmt.Sprint(chatsock.FieldOf(s.Get(j), "detail")); d != want {
		t.Fatalf("w1's failed receipt says %q, want %q", d, want)
	}
	r.node.start()
	testkit.Eventually(t, wait, func() bool {
		_, err := r.hub.d.ClusterHub().Source().Thread(t.Context(), remoteID)
		return err == nil
	}, "b answering for its thread")
	reload := r.hub.dial("phone", -1, "")
	done := reload.WaitFor(0, wait, chatsock.Type(chat.TypeReplayDone), "the reload's replay")
	texts, failed := 0, 0
	for _, e := range reload.Snapshot()[:done] {
		if e.Type == chat.TypeUserMessage && chatsock.FieldOf(e, "text") == "remember w1" {
			texts++
		}
		if chatsock.Delivery("w1", chat.DeliveryFailed)(e) && chatsock.FieldOf(e, "detail") == want {
			failed++
		}
	}
	if texts != 1 || failed != 1 {
		t.Fatalf("the reload shows w1's text %d times and its failure %d times, want each once:\n%s", texts, failed, chatsock.Summary(reload.Snapshot()))
	}
	_, local, _ := cluster.SplitRemoteID(remoteID)
	var log struct {
		Events []struct {
			ID string `json:"message_id"`
		} `json:"events"`
	}
	r.node.get("/api/threads/"+string(local)+"/events?since=0", &log)
	for _, e := range log.Events {
		if e.ID == "w1" {
			t.Fatal("b's own log holds w1: it never reached b")
		}
	}
}

// A route showing a node's thread is kept like a route showing a local
// thread: after the hub restarts, the person's chat shows the same thread.
func TestAHubRestartKeepsARouteOnANodesThread(t *testing.T) {
	r := newRig(t)
	s := r.hub.dial("phone", -1, "")
	s.Send(newThreadMsg("m1", "hello", r.work))
	s.WaitFor(0, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "the first turn")
	remoteID := shownThread(s.Get(s.WaitFor(0, wait, func(e client.Event) bool { return shownThread(e) != "" }, "the route's thread")))
	s.Client().Close()
	// The same listener, so b's link finds the hub again.
	r.hub.cfg.Cluster.Listen = r.hub.d.ClusterHub().Addr()
	r.hub.stop()
	r.hub.start()
	// b's link is back: the hub reads the thread from b (until then from
	// its copy: the restarted hub lists b offline until b writes again).
	testkit.Eventually(t, wait, func() bool {
		th, err := r.hub.d.ClusterHub().Source().Thread(t.Context(), remoteID)
		return err == nil && th.Copy == nil
	}, "b answers the hub again")
	again := r.hub.dial("phone", -1, "")
	if i := again.WaitFor(0, wait, func(e client.Event) bool { return e.Type == chat.TypeThread }, "the route's thread after the restart"); shownThread(again.Get(i)) != remoteID {
		t.Fatalf("after the hub's restart the route shows %q, want %q", shownThread(again.Get(i)), remoteID)
	}
}
