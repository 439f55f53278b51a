package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/fanout"
	"github.com/parleyhq/parley/internal/mcpserver"
	"github.com/parleyhq/parley/internal/router"
	"github.com/parleyhq/parley/internal/store/sqlite"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/scripted"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const wait = 10 * time.Second

// rig is the server over a real router (SQLite, the scripted agent), as
// the daemon puts them together.
type rig struct {
	srv *mcpserver.Server
	rt  *router.Router
	st  *sqlite.Store
}

type routerPerson struct{ rt **router.Router }

func (p routerPerson) Ask(ctx context.Context, th chat.ThreadID, q chat.QuestionItem) ([]string, error) {
	return (*p.rt).Ask(ctx, th, q)
}

func (p routerPerson) Notify(ctx context.Context, th chat.ThreadID, n chat.Notice) error {
	return (*p.rt).Notify(ctx, th, n)
}

func newRig(t *testing.T) *rig {
	t.Helper()
	dir, work := t.TempDir(), t.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "parley.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{st: st}
	r.srv, err = mcpserver.Listen(routerPerson{rt: &r.rt}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.rt = router.New(st, fanout.New(nil), router.Options{
		// The session stays live between turns, as a configured agent's does.
		Agents:       []config.Agent{{ID: "echo", Transport: "scripted", Command: "scripted", Roots: []string{work}, IdleTimeout: config.Duration{Duration: time.Hour}}},
		DefaultAgent: "echo",
		Drivers:      map[string]driver.Driver{"scripted": &scripted.Driver{}},
		Tools:        r.srv,
	})
	if err := r.rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := r.rt.Close(ctx); err != nil {
			t.Errorf("router close: %v", err)
		}
		if err := r.srv.Close(ctx); err != nil {
			t.Errorf("server close: %v", err)
		}
		st.Close()
	})
	return r
}

// thread makes a thread for chat and runs one turn, so its session is live.
func (r *rig) thread(t *testing.T, chatID string) chat.ThreadID {
	t.Helper()
	from := chat.RouteKey{Channel: "test", Chat: chatID}
	_, th, err := r.rt.Send(t.Context(), router.SendRequest{From: from, Message: router.Message{MessageID: "m1", Text: "say hi"}})
	if err != nil {
		t.Fatal(err)
	}
	r.waitEvent(t, th, func(e chat.Event) bool { return e.Type == chat.TypePromptDone })
	return th
}

func (r *rig) events(t *testing.T, th chat.ThreadID) []chat.Event {
	t.Helper()
	evs, err := r.st.Events(t.Context(), th, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func (r *rig) waitEvent(t *testing.T, th chat.ThreadID, match func(chat.Event) bool) chat.Event {
	t.Helper()
	var got chat.Event
	testkit.Eventually(t, wait, func() bool {
		for _, e := range r.events(t, th) {
			if match(e) {
				got = e
				return true
			}
		}
		return false
	}, "no such event in thread %s", th)
	return got
}

// bearer adds a credential to every request, as an agent's MCP config does.
type bearer struct{ headers map[string]string }

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range b.headers {
		req.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(req)
}

// connect is an MCP client with the given headers.
func connect(t *testing.T, url string, headers map[string]string) (*mcp.ClientSession, error) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test-agent"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{headers}}, MaxRetries: -1, DisableStandaloneSSE: true}
	cs, err := c.Connect(t.Context(), tr, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func notices(evs []chat.Event) []string {
	var out []string
	for _, e := range evs {
		if e.Type == chat.TypeNotice {
			var n chat.Notice
			_ = e.Decode(&n)
			out = append(out, n.Text)
		}
	}
	return out
}

// Each credential reaches its own thread alone: what one session's agent
// says lands in its thread, never in another's.
func TestACredentialReachesItsOwnThreadOnly(t *testing.T) {
	r := newRig(t)
	a, b := r.thread(t, "a"), r.thread(t, "b")
	srvA, revokeA := r.srv.Grant(a)
	defer revokeA()
	srvB, revokeB := r.srv.Grant(b)
	defer revokeB()
	for _, c := range []struct {
		srv  *driver.MCPServer
		text string
	}{{srvA, "for a"}, {srvB, "for b"}} {
		cs, err := connect(t, c.srv.URL, c.srv.Headers)
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "notify_person", Arguments: map[string]any{"text": c.text, "level": "done"}})
		if err != nil || res.IsError {
			t.Fatalf("notify_person: %v %+v", err, res)
		}
	}
	if got := notices(r.events(t, a)); len(got) != 1 || got[0] != "for a" {
		t.Fatalf("thread a's notices %q, want only its own", got)
	}
	if got := notices(r.events(t, b)); len(got) != 1 || got[0] != "for b" {
		t.Fatalf("thread b's notices %q, want only its own", got)
	}
}

// A request without a credential, with one parley never made, or with one
// whose session ended is refused, and nothing reaches any thread.
func TestCallsWithoutAValidCredentialAreRefused(t *testing.T) {
	r := newRig(t)
	a := r.thread(t, "a")
	srvA, revokeA := r.srv.Grant(a)
	revokeA() // its session ended
	cases := map[string]map[string]string{
		"none":    nil,
		"unknown": {"Authorization": "Bearer not-a-credential"},
		"ended":   srvA.Headers,
		"empty":   {"Authorization": "Bearer "},
		"basic":   {"Authorization": strings.Replace(srvA.Headers["Authorization"], "Bearer", "Basic", 1)},
	}
	for name, h := range cases {
		t.Run(name, func(t *testing.T) {
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"notify_person","arguments":{"text":"sneaky"}}}`
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, r.srv.URL(), strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range h {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401", resp.StatusCode)
			}
			if _, err := connect(t, r.srv.URL(), h); err == nil {
				t.Fatal("an MCP client connected without a valid credential")
			}
		})
	}
	if got := notices(r.events(t, a)); len(got) != 0 {
		t.Fatalf("notices %q reached the thread", got)
	}
}

// ask_person opens a question card in its thread; the answer given through
// the router (as any surface gives it) is the tool's result.
func TestAskPersonReturnsTheAnswer(t *testing.T) {
	r := newRig(t)
	a := r.thread(t, "a")
	srvA, revoke := r.srv.Grant(a)
	defer revoke()
	cs, err := connect(t, srvA.URL, srvA.Headers)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ask_person",
			Arguments: map[string]any{"question": "Ship it?", "options": []string{"yes", "no"}, "multi": true}})
		done <- result{res, err}
	}()
	card := r.waitEvent(t, a, func(e chat.Event) bool { return e.Type == chat.TypeQuestion })
	var q chat.Question
	if err := card.Decode(&q); err != nil {
		t.Fatal(err)
	}
	if len(q.Questions) != 1 || q.Questions[0].Question != "Ship it?" || !q.Questions[0].MultiSelect || len(q.Questions[0].Options) != 2 {
		t.Fatalf("card %s", card.Payload)
	}
	ans := chat.Answers{"Ship it?": chat.Answer{Labels: []string{"yes", "no"}}}
	if err := r.rt.Control(t.Context(), router.Control{Thread: a, From: chat.RouteKey{Channel: "test", Chat: "a"},
		Answer: &router.QuestionAnswer{RequestID: q.RequestID, Answers: ans}}); err != nil {
		t.Fatal(err)
	}
	got := <-done
	if got.err != nil || got.res.IsError {
		t.Fatalf("ask_person: %v %+v", got.err, got.res)
	}
	if text := got.res.Content[0].(*mcp.TextContent).Text; text != "yes\nno" {
		t.Fatalf("tool result %q, want the labels picked", text)
	}
	// Answered once: a second answer is refused.
	err = r.rt.Control(t.Context(), router.Control{Thread: a, Answer: &router.QuestionAnswer{RequestID: q.RequestID, Answers: ans}})
	if !errors.Is(err, chat.ErrCardClosed) {
		t.Fatalf("second answer: %v, want card_closed", err)
	}
}

// rawCall posts one tools/call as an agent does (stateless: no initialize
// needed), with ctx on the request: cancelling it drops the connection.
func rawCall(ctx context.Context, srv *driver.MCPServer, tool string, args map[string]any) (*http.Response, error) {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args}})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range srv.Headers {
		req.Header.Set(k, v)
	}
	return http.DefaultClient.Do(req)
}

// A stop closes the card of the turn, and the agent's call ends with an
// error it can read; an agent that drops its call withdraws the card.
func TestAskPersonEndsWithTheCard(t *testing.T) {
	r := newRig(t)
	a := r.thread(t, "a")
	srvA, revoke := r.srv.Grant(a)
	defer revoke()
	cs, err := connect(t, srvA.URL, srvA.Headers)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("stop", func(t *testing.T) {
		// A turn runs (the agent asks from inside one).
		from := chat.RouteKey{Channel: "test", Chat: "a"}
		if _, _, err := r.rt.Send(t.Context(), router.SendRequest{From: from, Message: router.Message{MessageID: "m2", Text: "pause 1h"}}); err != nil {
			t.Fatal(err)
		}
		r.waitEvent(t, a, func(e chat.Event) bool {
			return e.Type == chat.TypeDelivery && strings.Contains(string(e.Payload), `"submitted"`) && strings.Contains(string(e.Payload), `"m2"`)
		})
		done := make(chan *mcp.CallToolResult, 1)
		go func() {
			res, _ := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ask_person", Arguments: map[string]any{"question": "Stop me?"}})
			done <- res
		}()
		r.waitEvent(t, a, func(e chat.Event) bool {
			return e.Type == chat.TypeQuestion && strings.Contains(string(e.Payload), "Stop me?")
		})
		if err := r.rt.Control(t.Context(), router.Control{Thread: a, From: from, Stop: true}); err != nil {
			t.Fatal(err)
		}
		res := <-done
		if res == nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "closed unanswered") {
			t.Fatalf("result %+v, want an error saying the question closed", res)
		}
	})
	t.Run("withdrawn", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			if resp, err := rawCall(ctx, srvA, "ask_person", map[string]any{"question": "Forget me?"}); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body) // the answer streams until the call ends
				resp.Body.Close()
			}
		}()
		card := r.waitEvent(t, a, func(e chat.Event) bool {
			return e.Type == chat.TypeQuestion && strings.Contains(string(e.Payload), "Forget me?")
		})
		var q chat.Question
		_ = card.Decode(&q)
		cancel()
		<-done
		res := r.waitEvent(t, a, func(e chat.Event) bool {
			return e.Type == chat.TypeQuestionResolved && strings.Contains(string(e.Payload), q.RequestID)
		})
		var qr chat.QuestionResolved
		_ = json.Unmarshal(res.Payload, &qr)
		if !qr.Cancelled {
			t.Fatalf("resolution %s, want the card withdrawn", res.Payload)
		}
	})
}
