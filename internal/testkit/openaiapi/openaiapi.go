// Package openaiapi is a small scripted stand-in for OpenAI's Responses API
// (POST /v1/responses, streamed as server-sent events) and its Chat
// Completions API (POST /v1/chat/completions, streamed or not) on loopback,
// for running Codex (through codex-acp), Qwen Code, OpenCode and Copilot CLI
// offline in tests. Rules match the last user text or a tool call's output;
// replies are streamed text or one function call. Every request is recorded.
package openaiapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/testkit/standin"
)

// Rule answers the first request it matches. Contains matches the last user
// text; Output matches a request whose newest input item is the output of a
// function call of that name.
type Rule struct {
	Contains string
	Output   string
	Reply    Reply
}

// Reply is streamed text (in Chunks pieces, Delay apart) or a function call.
type Reply struct {
	Text   string
	Chunks int
	Delay  time.Duration
	Call   string // function name
	Args   any    // function arguments, marshalled to a JSON string
	// Namespace is the call's tool namespace (Codex offers an MCP server's
	// tools as one, mcp__<server>); a Rule's Output matches Call alone.
	Namespace string
}

// Request is one recorded request.
type Request struct {
	Path string
	Body map[string]any
	Raw  []byte
}

// Server is the stand-in; its scenario is the rules, which match without limit.
type Server struct {
	standin.Server[Request, []Rule]

	// Guarded by Mu, with the rules.
	calls map[string]string // call_id → function name, for calls the stand-in made
	n     int
}

// TB is the part of testing.TB the stand-in needs.
type TB = standin.TB

// Start starts a stand-in on 127.0.0.1 and closes it when the test ends.
func Start(t TB, rules ...Rule) *Server {
	t.Helper()
	s := &Server{calls: map[string]string{}}
	if err := s.Init("127.0.0.1:0", rules, func(r []Rule) int { return len(r) }, http.HandlerFunc(s.serve)); err != nil {
		t.Fatalf("openaiapi: listen: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// Output returns the first recorded output of a call to the named function.
func (s *Server) Output(name string) (string, bool) {
	reqs := s.Requests()
	s.Mu.Lock()
	defer s.Mu.Unlock()
	for _, r := range reqs {
		for id, out := range chatOutputs(r.Body) {
			if s.calls[id] == name {
				return out, true
			}
		}
		items, _ := r.Body["input"].([]any)
		for _, it := range items {
			m, _ := it.(map[string]any)
			if m["type"] == "function_call_output" && s.calls[fmt.Sprint(m["call_id"])] == name {
				return outputText(m["output"]), true
			}
		}
	}
	return "", false
}

func outputText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// lastInput describes the newest input item: a user text or a call output.
func lastInput(body map[string]any) (text, callID string) {
	items, _ := body["input"].([]any)
	for i := len(items) - 1; i >= 0; i-- {
		m, _ := items[i].(map[string]any)
		switch m["type"] {
		case "function_call_output":
			return "", fmt.Sprint(m["call_id"])
		case "message", nil:
			if m["role"] != "user" {
				continue
			}
			switch c := m["content"].(type) {
			case string:
				return c, ""
			case []any:
				for j := len(c) - 1; j >= 0; j-- {
					p, _ := c[j].(map[string]any)
					if t, ok := p["text"].(string); ok {
						return t, ""
					}
				}
			}
			return "", ""
		}
	}
	return "", ""
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	s.Record(Request{Path: r.URL.Path, Body: body, Raw: raw})
	chatAPI := strings.HasSuffix(r.URL.Path, "/chat/completions")
	if r.Method != http.MethodPost || !(chatAPI || strings.HasSuffix(r.URL.Path, "/responses")) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"data":[],"models":[]}`))
		return
	}
	text, callID := lastInput(body)
	if chatAPI {
		text, callID = lastChatInput(body)
	}
	reply := Reply{Text: fmt.Sprintf("(stand-in: no rule for %q)", text)}
	s.Mu.Lock()
	for _, rule := range s.Sc {
		if (rule.Output != "" && callID != "" && s.calls[callID] == rule.Output) ||
			(rule.Output == "" && callID == "" && strings.Contains(text, rule.Contains)) {
			reply = rule.Reply
			break
		}
	}
	s.n++
	n := s.n
	if reply.Call != "" {
		s.calls[fmt.Sprintf("call_%d", n)] = reply.Call
	}
	s.Mu.Unlock()
	if chatAPI {
		s.chatCompletion(w, r, body, n, reply)
		return
	}
	s.stream(w, r, n, reply)
}

func (s *Server) stream(w http.ResponseWriter, r *http.Request, n int, reply Reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	send := func(typ string, v map[string]any) {
		v["type"] = typ
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
		if fl != nil {
			fl.Flush()
		}
	}
	respID := fmt.Sprintf("resp_%d", n)
	send("response.created", map[string]any{"response": map[string]any{"id": respID}})
	var item map[string]any
	if reply.Call != "" {
		args, _ := json.Marshal(reply.Args)
		item = map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d", n), "call_id": fmt.Sprintf("call_%d", n), "name": reply.Call, "arguments": string(args)}
		if reply.Namespace != "" {
			item["namespace"] = reply.Namespace
		}
	} else {
		id := fmt.Sprintf("msg_%d", n)
		send("response.output_item.added", map[string]any{"output_index": 0, "item": map[string]any{"type": "message", "id": id, "role": "assistant", "content": []any{}}})
		for _, piece := range standin.Split(reply.Text, reply.Chunks) {
			if reply.Delay > 0 && !standin.Wait(r.Context(), reply.Delay) {
				return
			}
			send("response.output_text.delta", map[string]any{"item_id": id, "output_index": 0, "content_index": 0, "delta": piece})
		}
		item = map[string]any{"type": "message", "id": id, "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": reply.Text}}}
	}
	send("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	send("response.completed", map[string]any{"response": map[string]any{"id": respID, "usage": map[string]any{
		"input_tokens": 10, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": 5, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 15,
	}}})
}

// APIKey is the fake key the environment carries. It is not a secret.
const APIKey = "sk-parley-standin-openai-0000000000000000"

// CodexEnv writes an isolated CODEX_HOME under home with a config that points
// Codex at srv and returns the environment for codex-acp.
func CodexEnv(t TB, srv *Server, home string) []string {
	t.Helper()
	codexHome := filepath.Join(home, ".codex")
	if err := os.MkdirAll(codexHome, 0o700); err != nil {
		t.Fatalf("openaiapi: %v", err)
	}
	cfg := fmt.Sprintf(`model = "gpt-5"
model_provider = "standin"
check_for_update_on_startup = false

[model_providers.standin]
name = "stand-in"
base_url = %q
env_key = "OPENAI_API_KEY"
wire_api = "responses"
supports_websockets = false
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false
`, srv.URL+"/v1")
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatalf("openaiapi: %v", err)
	}
	return []string{"HOME=" + home, "CODEX_HOME=" + codexHome, "OPENAI_API_KEY=" + APIKey}
}
