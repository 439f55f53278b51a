package bridge

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/parleyhq/parley/internal/channel/acpagent"
	"github.com/parleyhq/parley/internal/testkit"
)

// scriptAgent is parley's side of the connection, scripted: each prompt runs
// turn, which streams chunks with say and returns when the turn ends.
type scriptAgent struct {
	acp.Agent // methods the bridge does not call
	conn      *acp.AgentSideConnection
	turn      func(say func(text string))
}

func (a *scriptAgent) Initialize(context.Context, acp.InitializeRequest) (acp.InitializeResponse, error) {
	return acp.InitializeResponse{ProtocolVersion: acp.ProtocolVersionNumber}, nil
}

func (a *scriptAgent) NewSession(_ context.Context, p acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	id, _ := p.Meta[acpagent.MetaChat].(string)
	return acp.NewSessionResponse{SessionId: acp.SessionId(id)}, nil
}

func (a *scriptAgent) Prompt(ctx context.Context, p acp.PromptRequest) (acp.PromptResponse, error) {
	a.turn(func(text string) {
		_ = a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: p.SessionId,
			Update: acp.UpdateAgentMessageText(text)})
	})
	return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// editor is a platform that edits messages: it keeps each message's text and
// every call in order.
type editor struct {
	mu    sync.Mutex
	texts map[string]string
	calls []string // "post 1 text" / "edit 1 text"
}

func (e *editor) Say(ctx context.Context, chat, text string) error {
	_, err := e.Post(ctx, chat, text)
	return err
}

func (e *editor) Post(_ context.Context, _, text string) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	id := strconv.Itoa(len(e.texts) + 1)
	e.texts[id] = text
	e.calls = append(e.calls, "post "+id+" "+text)
	return id, nil
}

func (e *editor) Edit(_ context.Context, _, id, text string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.texts[id] = text
	e.calls = append(e.calls, "edit "+id+" "+text)
	return nil
}

func (e *editor) text(id string) string { e.mu.Lock(); defer e.mu.Unlock(); return e.texts[id] }

func (e *editor) called() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.calls...)
}

// connect is a bridge on an editing platform, speaking ACP with a.
func connect(t *testing.T, a *scriptAgent, interval time.Duration) (*Bridge, *editor) {
	t.Helper()
	toClient, fromAgent := io.Pipe()
	toAgent, fromClient := io.Pipe()
	t.Cleanup(func() { fromAgent.Close(); fromClient.Close() })
	a.conn = acp.NewAgentSideConnection(a, fromAgent, toAgent)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	b, _, err := Connect(ctx, toClient, fromClient, "test", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ed := &editor{texts: map[string]string{}}
	b.Use(ed, Format{Limit: 1000, EditInterval: interval})
	return b, ed
}

// armed says whether the chat's flush timer is set.
func armed(b *Bridge, chat string) bool {
	b.mu.Lock()
	c := b.chats[chat]
	b.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held != nil
}

func TestHeldBackTextIsShownWhileTheTurnGoesOn(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	a := &scriptAgent{turn: func(say func(string)) {
		say("The first words")
		say(", and the last ones.") // inside the interval: held back
		<-release                   // a long tool run: nothing more comes
	}}
	b, ed := connect(t, a, 2*time.Second)
	b.Handle(context.Background(), "chat1", "alice", "hi")
	testkit.Eventually(t, 30*time.Second, func() bool { return ed.text("1") == "The first words, and the last ones." },
		"the held-back text was not shown while the turn went on; calls %v", testkit.Later(func() any { return ed.called() }))
	if armed(b, "chat1") {
		t.Errorf("the flush timer is still set with nothing held back")
	}
	close(release)
	// The turn's end shows the rest (nothing new) and leaves no timer set.
	testkit.Eventually(t, 30*time.Second, func() bool { return len(ed.called()) >= 3 }, "the turn's end showed nothing; calls %v", testkit.Later(func() any { return ed.called() }))
	if armed(b, "chat1") {
		t.Errorf("a flush timer is set after the turn's end")
	}
}

func TestTheTurnsEndStopsTheFlushTimer(t *testing.T) {
	t.Parallel()
	a := &scriptAgent{turn: func(say func(string)) {
		say("One")
		say(" two") // held back, then the turn ends at once
	}}
	// An interval long enough that the turn surely ends inside it.
	b, ed := connect(t, a, time.Hour)
	b.Handle(context.Background(), "chat1", "alice", "hi")
	testkit.Eventually(t, 30*time.Second, func() bool { return ed.text("1") == "One two" }, "the turn's end did not show the rest; calls %v", testkit.Later(func() any { return ed.called() }))
	if armed(b, "chat1") {
		t.Errorf("the flush timer outlived the turn")
	}
	if got := ed.called(); len(got) != 2 || got[0] != "post 1 One" || got[1] != "edit 1 One two" {
		t.Errorf("calls: got %q, want the first words posted and the rest edited in at the end", got)
	}
}
