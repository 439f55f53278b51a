package acpagent_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"github.com/coder/websocket"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/daemon"
	"github.com/parleyhq/parley/internal/testkit/scriptd"
)

// fakeClient is an ACP client built on the Go SDK's client side.
type fakeClient struct {
	forms bool // answer questions as forms

	mu      sync.Mutex
	text    map[acp.SessionId]string
	updates []string // sessionUpdate kinds seen
	asked   []string // what was asked (permission titles, form messages)
}

func (c *fakeClient) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	u := n.Update
	switch {
	case u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil:
		c.text[n.SessionId] += u.AgentMessageChunk.Content.Text.Text
		c.updates = append(c.updates, "agent_message_chunk")
	case u.UserMessageChunk != nil:
		c.updates = append(c.updates, "user_message_chunk")
	}
	return nil
}

func (c *fakeClient) RequestPermission(_ context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	c.mu.Lock()
	c.asked = append(c.asked, "permission:"+*p.ToolCall.Title)
	c.mu.Unlock()
	// Questions asked as permissions offer the answers: take the second.
	if p.Meta["parley/question"] == true {
		return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeSelected(p.Options[1].OptionId)}, nil
	}
	return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeSelected(p.Options[0].OptionId)}, nil
}

func (c *fakeClient) UnstableCreateElicitation(_ context.Context, p acp.UnstableCreateElicitationRequest) (acp.UnstableCreateElicitationResponse, error) {
	c.mu.Lock()
	c.asked = append(c.asked, "form:"+p.Form.Message)
	c.mu.Unlock()
	r := acp.NewUnstableCreateElicitationResponseAccept()
	r.Accept.Content = map[string]any{"q0": "green"}
	return r, nil
}

func (c *fakeClient) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, acp.NewMethodNotFound("fs/read_text_file")
}
func (c *fakeClient) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, acp.NewMethodNotFound("fs/write_text_file")
}
func (c *fakeClient) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, acp.NewMethodNotFound("terminal/create")
}
func (c *fakeClient) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, acp.NewMethodNotFound("terminal/kill")
}
func (c *fakeClient) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, acp.NewMethodNotFound("terminal/output")
}
func (c *fakeClient) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, acp.NewMethodNotFound("terminal/release")
}
func (c *fakeClient) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, acp.NewMethodNotFound("terminal/wait_for_exit")
}

func (c *fakeClient) askedList() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.asked, ",")
}

func (c *fakeClient) textOf(id acp.SessionId) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.text[id]
}

type env struct {
	d    *daemon.Daemon
	work string
}

func startDaemon(t *testing.T) env { t.Helper(); return startDaemonWith(t, nil) }

// startDaemonWith starts a daemon whose config mutate may change first.
func startDaemonWith(t *testing.T, mutate func(*config.Config)) env {
	t.Helper()
	r := scriptd.Start(t, mutate)
	return env{d: r.D(), work: r.Work}
}

// connect opens /ws/acp as an SDK client.
func (e env) connect(t *testing.T, c *fakeClient) (*acp.ClientSideConnection, func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h := http.Header{}
	h.Set("Authorization", "Bearer "+e.d.Token())
	ws, _, err := websocket.Dial(ctx, "ws://"+e.d.Addr()+"/ws/acp", &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		t.Fatal(err)
	}
	nc := websocket.NetConn(context.Background(), ws, websocket.MessageText)
	t.Cleanup(func() { nc.Close() })
	c.text = map[acp.SessionId]string{}
	conn := acp.NewClientSideConnection(c, nc, nc)
	return conn, func() {
		nc.Close()
		<-conn.Done()
	}
}

func TestLoadReplaysTheLogAndQuestionsAreAsked(t *testing.T) {
	t.Parallel()
	e := startDaemon(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// An editor with forms: a question becomes elicitation/create.
	c1 := &fakeClient{forms: true}
	conn, close1 := e.connect(t, c1)
	if _, err := conn.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber,
		ClientCapabilities: acp.ClientCapabilities{Elicitation: &acp.ElicitationCapabilities{Form: &acp.ElicitationFormCapabilities{}}}}); err != nil {
		t.Fatal(err)
	}
	s, err := conn.NewSession(ctx, acp.NewSessionRequest{Cwd: e.work, McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := conn.Prompt(ctx, acp.PromptRequest{SessionId: s.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("say first")}})
	if err != nil || r.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt: got %v, %v; want end_turn", r.StopReason, err)
	}
	r, err = conn.Prompt(ctx, acp.PromptRequest{SessionId: s.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("question Colour?|red,green")}})
	if err != nil || r.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("question prompt: got %v, %v; want end_turn", r.StopReason, err)
	}
	if got := c1.textOf(s.SessionId); got != "firstanswer: Colour?=green" {
		t.Errorf("text: got %q, want \"firstanswer: Colour?=green\"", got)
	}
	if got := c1.askedList(); got != "form:Colour?" {
		t.Errorf("asked: got %q, want the question as a form", got)
	}

	// The editor goes; a second one without forms loads the session: the log is
	// replayed, and a new question comes as a permission request whose options
	// are the answers.
	close1()
	c2 := &fakeClient{}
	conn2, _ := e.connect(t, c2)
	if _, err := conn2.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	list, err := conn2.ListSessions(ctx, acp.ListSessionsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Sessions) != 1 || list.Sessions[0].SessionId != s.SessionId || list.Sessions[0].Cwd != e.work {
		t.Fatalf("session/list: got %+v, want the one session in %s", list.Sessions, e.work)
	}
	if _, err := conn2.LoadSession(ctx, acp.LoadSessionRequest{SessionId: s.SessionId, Cwd: e.work, McpServers: []acp.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	if got := c2.textOf(s.SessionId); got != "firstanswer: Colour?=green" {
		t.Errorf("replayed text: got %q, want \"firstanswer: Colour?=green\"", got)
	}
	c2.mu.Lock()
	users := strings.Count(strings.Join(c2.updates, ","), "user_message_chunk")
	c2.mu.Unlock()
	if users != 2 {
		t.Errorf("replayed user messages: got %d, want 2", users)
	}
	r, err = conn2.Prompt(ctx, acp.PromptRequest{SessionId: s.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("question Size?|small,large")}})
	if err != nil || r.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("second question: got %v, %v; want end_turn", r.StopReason, err)
	}
	if got := c2.textOf(s.SessionId); !strings.HasSuffix(got, "answer: Size?=large") {
		t.Errorf("text: got %q, want it to end with \"answer: Size?=large\"", got)
	}
	if got := c2.askedList(); got != "permission:Size?" {
		t.Errorf("asked: got %q, want the question as a permission request", got)
	}

	// The thread behind the session is the one both saw.
	tid, err := e.d.Router().ThreadOf(ctx, chat.RouteKey{Channel: "acp", Chat: string(s.SessionId)})
	if err != nil || tid == "" {
		t.Fatalf("the session's route has no thread: %v", err)
	}
}

func TestPromptOnUnknownSessionIsRefused(t *testing.T) {
	t.Parallel()
	e := startDaemon(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _ := e.connect(t, &fakeClient{})
	if _, err := conn.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	_, err := conn.Prompt(ctx, acp.PromptRequest{SessionId: "nope", Prompt: []acp.ContentBlock{acp.TextBlock("hi")}})
	if err == nil || !strings.Contains(err.Error(), "no open session") {
		t.Errorf("prompt on an unknown session: got %v, want \"no open session\"", err)
	}
	_, err = conn.LoadSession(ctx, acp.LoadSessionRequest{SessionId: "nope", Cwd: e.work, McpServers: []acp.McpServer{}})
	if err == nil {
		t.Errorf("load of an unknown session: got no error")
	}
}
