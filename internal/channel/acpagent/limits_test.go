package acpagent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
)

// One size limit for every entry point: a message of limits.max_message_bytes
// goes through the socket, REST and /ws/acp alike, one byte more is refused by
// each with the same words, and nothing of a refused message is stored.
func TestOneMessageSizeLimitForEveryEntryPoint(t *testing.T) {
	t.Parallel()
	const max = 8 << 10
	e := startDaemonWith(t, func(c *config.Config) { c.Limits.MaxMessageBytes = max })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	text := func(n int) string { return "say " + strings.Repeat("x", n-4) }
	refused := fmt.Sprintf("larger than the limit of %d bytes (limits.max_message_bytes)", max)

	// /ws/acp: at the limit it goes; over it, and a 3 MiB prompt, are refused.
	conn, _ := e.connect(t, &fakeClient{})
	if _, err := conn.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	s, err := conn.NewSession(ctx, acp.NewSessionRequest{Cwd: e.work, McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	prompt := func(txt string) (acp.PromptResponse, error) {
		return conn.Prompt(ctx, acp.PromptRequest{SessionId: s.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock(txt)}})
	}
	if r, err := prompt(text(max)); err != nil || r.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("acp prompt at the limit: got %v, %v; want end_turn", r.StopReason, err)
	}
	for _, n := range []int{max + 1, 3 << 20} {
		if _, err := prompt(text(n)); err == nil || !strings.Contains(err.Error(), refused) {
			t.Fatalf("acp prompt of %d bytes: got %v, want %q", n, err, refused)
		}
	}
	thread, err := e.d.Router().ThreadOf(ctx, chat.RouteKey{Channel: "acp", Chat: string(s.SessionId)})
	if err != nil || thread == "" {
		t.Fatalf("the acp session has no thread: %v", err)
	}

	// REST, on the same thread.
	post := func(id string, n int) (int, string) {
		body := fmt.Sprintf(`{"message_id":%q,"text":%q}`, id, text(n))
		req, _ := http.NewRequest("POST", "http://"+e.d.Addr()+"/api/threads/"+string(thread)+"/messages", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+e.d.Token())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post("rest-at", max); code != http.StatusOK {
		t.Fatalf("REST at the limit: got %d %s, want 200", code, body)
	}
	if code, body := post("rest-over", max+1); code != http.StatusRequestEntityTooLarge || !strings.Contains(body, refused) {
		t.Fatalf("REST over the limit: got %d %s, want 413 saying %q", code, body, refused)
	}

	// The dashboard's socket.
	c := chatsock.Dial(t, "http://"+e.d.Addr(), e.d.Token(), client.Options{Chat: "limits", Since: -1})
	c.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypeReplayDone), "ready")
	c.Send(chatsock.Msg("ws-over", text(max+1)))
	i := c.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypeError), "the refusal")
	if got := fmt.Sprint(chatsock.FieldOf(c.Get(i), "message")); chatsock.FieldOf(c.Get(i), "code") != chat.CodeTooLarge || !strings.Contains(got, refused) {
		t.Fatalf("socket over the limit: got %s, want too_large saying %q", c.Get(i).Raw, refused)
	}
	c.Send(chatsock.Msg("ws-at", text(max)))
	c.WaitFor(i, 10*time.Second, chatsock.PromptDone("ws-at", chat.StopEndTurn), "the message at the limit")

	// Nothing over the limit reached the log.
	var log struct {
		Events []struct {
			Type    string `json:"type"`
			Payload struct {
				MessageID string `json:"message_id"`
				Text      string `json:"text"`
			} `json:"payload"`
		} `json:"events"`
	}
	code, body := e.get(t, "/api/threads/"+string(thread)+"/events?limit=10000")
	if code != http.StatusOK {
		t.Fatalf("events: %d %s", code, body)
	}
	if err := json.Unmarshal([]byte(body), &log); err != nil {
		t.Fatal(err)
	}
	users := 0
	for _, ev := range log.Events {
		if ev.Type == chat.TypeUserMessage {
			users++
			if len(ev.Payload.Text) > max {
				t.Errorf("the log holds a user message of %d bytes (%s)", len(ev.Payload.Text), ev.Payload.MessageID)
			}
		}
	}
	if users != 2 {
		t.Errorf("user messages in the acp thread's log: got %d, want 2 (acp and REST at the limit)", users)
	}
}

// get calls the REST API with the token and returns the status and body.
func (e env) get(t *testing.T, path string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+e.d.Addr()+path, nil)
	req.Header.Set("Authorization", "Bearer "+e.d.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
