package daemon_test

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"github.com/coder/websocket"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/scripted"
)

// startHub starts a daemon that is a cluster's hub, named "hub".
func startHub(t testing.TB) *testEnv {
	t.Helper()
	return startDaemon(t, func(cfg *config.Config) { cfg.Cluster.Node, cfg.Cluster.Listen = "hub", "127.0.0.1:0" })
}

// joinNode starts a daemon on the scripted agent joined to hub as name, and
// waits until the hub has it online.
func joinNode(t testing.TB, hub *testEnv, name string) *testEnv {
	t.Helper()
	addr := hub.d.ClusterHub().Addr()
	n := startWith(t, &scripted.Driver{}, func(cfg *config.Config) {
		cfg.Cluster.Node, cfg.Cluster.Hub = name, addr
		if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
			t.Fatal(err)
		}
		joinAs(t, hub, cfg.DataDir, name)
	})
	waitMachine(t, hub, name, true)
	return n
}

// joinAs joins the machine of dataDir to hub as name, with a token of hub's.
func joinAs(t testing.TB, hub *testEnv, dataDir, name string) {
	t.Helper()
	tok, err := cluster.IssueToken(hub.cfg.DataDir, hub.d.ClusterHub().Addr(), name, time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.Join(t.Context(), dataDir, tok, name, "test"); err != nil {
		t.Fatal(err)
	}
}

// waitMachine waits until the hub lists machine name online (or offline).
func waitMachine(t testing.TB, hub *testEnv, name string, online bool) {
	t.Helper()
	testkit.Eventually(t, 20*time.Second, func() bool {
		nodes, err := hub.d.ClusterHub().Nodes(context.Background())
		for _, n := range nodes {
			if n.Name == name {
				return err == nil && n.Online == online
			}
		}
		return false
	}, "machine "+name+" online or offline at the hub")
}

func shownThread(e client.Event) chat.ThreadID {
	var te chat.ThreadEvent
	if e.Type != chat.TypeThread || e.Decode(&te) != nil {
		return ""
	}
	return te.Thread.ID
}

// failedWith matches message id's failed receipt whose detail holds each of words.
func failedWith(id string, words ...string) func(client.Event) bool {
	return func(e client.Event) bool {
		if !chatsock.Delivery(id, chat.DeliveryFailed)(e) {
			return false
		}
		d, _ := chatsock.FieldOf(e, "detail").(string)
		for _, w := range words {
			if !strings.Contains(d, w) {
				return false
			}
		}
		return true
	}
}

// A message for b's thread that waited at the hub while b was away, and b
// is revoked: the message fails with the reason, which names b and says how
// to join it again, on every connection of the route, the one that sent it
// and another; a message sent to the thread afterwards (socket and REST)
// fails at once the same way, and the thread at the hub says so (404 with
// the words). The failures are kept at the hub: search finds them, and once
// b has joined again a reload of the route shows each message failed, among
// the thread's events, though b's own log never held them.
func TestAMessageForARevokedMachineFailsInItsThreadOnEverySurface(t *testing.T) {
	t.Parallel()
	hub := startHub(t)
	b := joinNode(t, hub, "b")

	s := hub.dial("desk", -1)
	s.WaitFor(0, 10*time.Second, chatsock.Type(chat.TypeReplayDone), "ready")
	s.Send(map[string]any{"type": "message", "message_id": "m1", "text": "say hi",
		"intent": map[string]any{"new": map[string]any{"cwd": b.root, "node": "b"}}})
	s.WaitFor(0, 10*time.Second, chatsock.PromptDone("m1", chat.StopEndTurn), "b's first turn at the hub")
	id := shownThread(s.Get(s.WaitFor(0, 10*time.Second, func(e client.Event) bool { return shownThread(e) != "" }, "the route's thread")))
	other := hub.dial("desk", -1)
	other.WaitFor(0, 10*time.Second, chatsock.Type(chat.TypeReplayDone), "the other tab ready")

	b.stop()
	waitMachine(t, hub, "b", false)
	from, fromOther := s.Len(), other.Len()
	s.Send(chatsock.Msg("w1", "deploy the staging branch"))
	s.WaitFor(from, 10*time.Second, chatsock.Delivery("w1", chat.DeliveryQueued), "w1 waits for b")

	if err := hub.d.ClusterHub().Revoke(t.Context(), "b"); err != nil {
		t.Fatal(err)
	}
	revoked := []string{"machine b was revoked", "parley join-token --name b", "parley join <token>"}
	s.WaitFor(from, 10*time.Second, failedWith("w1", revoked...), "w1 failed on the socket that sent it")
	other.WaitFor(fromOther, 10*time.Second, failedWith("w1", revoked...), "w1 failed on the route's other connection")
	other.WaitFor(fromOther, 10*time.Second, chatsock.Field(chat.TypeUserMessage, "message_id", "w1"), "w1's text on the other connection")

	// Sent now, to a machine no longer joined: failed at once, kept too.
	from = s.Len()
	s.Send(chatsock.Msg("w2", "and the production one"))
	s.WaitFor(from, 10*time.Second, failedWith("w2", revoked...), "w2 failed at once")
	var sent struct {
		State, Detail string
	}
	if st := hub.call("POST", "/api/threads/"+string(id)+"/messages", hub.d.Token(),
		map[string]string{"message_id": "r1", "text": "from a script"}, &sent); st != 200 || sent.State != chat.DeliveryFailed ||
		!strings.Contains(sent.Detail, "machine b was revoked") {
		t.Fatalf("REST send to b's thread: %d %+v, want failed, saying b was revoked", st, sent)
	}
	var gone struct {
		Error struct{ Code, Message string }
	}
	if st := hub.getJSON("/api/threads/"+string(id), &gone); st != 404 || !strings.Contains(gone.Error.Message, "machine b was revoked") ||
		!strings.Contains(gone.Error.Message, "parley join-token --name b") {
		t.Fatalf("GET b's thread at the hub: %d %+v, want 404 saying b was revoked and how to join it again", st, gone)
	}
	var found struct {
		Hits []chat.SearchHit
	}
	if st := hub.getJSON("/api/search?q=staging", &found); st != 200 || len(found.Hits) != 1 || found.Hits[0].Thread != id {
		t.Fatalf("search at the hub for w1: %d %+v, want b's thread", st, found)
	}

	// b joins again (a new key), and a reload shows the thread with each
	// failed message in it.
	joinAs(t, hub, b.cfg.DataDir, "b")
	b.start()
	waitMachine(t, hub, "b", true)
	reload := hub.dial("desk", -1)
	done := reload.WaitFor(0, 10*time.Second, chatsock.Type(chat.TypeReplayDone), "the reload's replay")
	evs := reload.Snapshot()[:done]
	for _, w := range []string{"w1", "w2"} {
		msg, failed := -1, -1
		for i, e := range evs {
			if chatsock.Field(chat.TypeUserMessage, "message_id", w)(e) {
				msg = i
			}
			if failedWith(w, revoked...)(e) {
				failed = i
			}
		}
		if msg < 0 || failed < msg {
			t.Fatalf("the reload shows %s at %d and its failure at %d, want both, in that order:\n%s", w, msg, failed, chatsock.Summary(evs))
		}
	}
	// Found again, under the thread's title, which b tells again.
	testkit.Eventually(t, 10*time.Second, func() bool {
		found.Hits = nil
		st := hub.getJSON("/api/search?q=staging", &found)
		return st == 200 && len(found.Hits) == 1 && found.Hits[0].Thread == id && found.Hits[0].Title == "say hi"
	}, "w1 found under its thread's title")
	_, local, _ := cluster.SplitRemoteID(id)
	var log struct{ Events []map[string]any }
	b.getJSON("/api/threads/"+string(local)+"/events?since=0", &log)
	for _, e := range log.Events {
		if e["message_id"] == "w1" || e["message_id"] == "w2" {
			t.Fatalf("b's own log holds %v: it never reached b", e)
		}
	}
}

// acpClient is an ACP client (an editor, an IM plugin's bridge) that takes
// what it is told and asks nothing.
type acpClient struct{}

func (acpClient) SessionUpdate(context.Context, acp.SessionNotification) error { return nil }
func (acpClient) RequestPermission(context.Context, acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeCancelled()}, nil
}
func (acpClient) UnstableCreateElicitation(context.Context, acp.UnstableCreateElicitationRequest) (acp.UnstableCreateElicitationResponse, error) {
	return acp.NewUnstableCreateElicitationResponseDecline(), nil
}
func (acpClient) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, acp.NewMethodNotFound("fs/read_text_file")
}
func (acpClient) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, acp.NewMethodNotFound("fs/write_text_file")
}
func (acpClient) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, acp.NewMethodNotFound("terminal/create")
}
func (acpClient) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, acp.NewMethodNotFound("terminal/kill")
}
func (acpClient) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, acp.NewMethodNotFound("terminal/output")
}
func (acpClient) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, acp.NewMethodNotFound("terminal/release")
}
func (acpClient) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, acp.NewMethodNotFound("terminal/wait_for_exit")
}

// On the hub's ACP side (an editor's `parley acp --agent echo@b`, an IM
// chat), a prompt for b's thread waiting while b is away ends when b is
// revoked, with the reason: the session is not left waiting for a turn that
// will never come.
func TestAPromptWaitingForARevokedMachineEndsWithTheReason(t *testing.T) {
	t.Parallel()
	hub := startHub(t)
	b := joinNode(t, hub, "b")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws://"+hub.d.Addr()+"/ws/acp?agent=echo@b",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + hub.d.Token()}}})
	if err != nil {
		t.Fatal(err)
	}
	nc := websocket.NetConn(context.Background(), ws, websocket.MessageText)
	conn := acp.NewClientSideConnection(acpClient{}, nc, nc)
	defer func() { nc.Close(); <-conn.Done() }()
	if _, err := conn.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	sess, err := conn.NewSession(ctx, acp.NewSessionRequest{Cwd: b.root, McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	prompt := func(ctx context.Context, text string) (acp.PromptResponse, error) {
		return conn.Prompt(ctx, acp.PromptRequest{SessionId: sess.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
	}
	if res, err := prompt(ctx, "say hi"); err != nil || res.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("the first prompt, on b: %+v %v", res, err)
	}

	b.stop()
	waitMachine(t, hub, "b", false)
	ended := make(chan error, 1)
	go func() {
		_, err := prompt(context.Background(), "deploy the staging branch")
		ended <- err
	}()
	testkit.Eventually(t, 10*time.Second, func() bool {
		n, err := hub.d.ClusterHub().Waiting(context.Background(), "b")
		return err == nil && n == 1
	}, "the prompt waiting for b at the hub")
	if err := hub.d.ClusterHub().Revoke(t.Context(), "b"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ended:
		if err == nil || !strings.Contains(err.Error(), "machine b was revoked") || !strings.Contains(err.Error(), "parley join-token --name b") {
			t.Fatalf("the waiting prompt ended with %v, want its failure saying b was revoked and how to join it again", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the prompt waiting for b never ended after b was revoked")
	}
}
