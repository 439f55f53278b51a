package openaiapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/parleyhq/parley/internal/testkit/standin"
)

// OpenAI Chat Completions (POST /v1/chat/completions), the API Qwen Code,
// OpenCode and Copilot CLI (bring-your-own-key) speak: the same rules as the
// Responses API, matched on the last message (a user text, or a "tool"
// message answering a call the stand-in made).

// lastChatInput describes the newest message: a user text or a tool result.
func lastChatInput(body map[string]any) (text, callID string) {
	msgs, _ := body["messages"].([]any)
	for i := len(msgs) - 1; i >= 0; i-- {
		m, _ := msgs[i].(map[string]any)
		switch m["role"] {
		case "tool":
			return "", fmt.Sprint(m["tool_call_id"])
		case "user":
			return contentString(m["content"]), ""
		case "system", "developer":
			continue
		default:
			return "", ""
		}
	}
	return "", ""
}

// contentString is a message's text: a string, or its text parts joined.
func contentString(c any) string {
	switch c := c.(type) {
	case string:
		return c
	case []any:
		out := ""
		for _, p := range c {
			m, _ := p.(map[string]any)
			if t, ok := m["text"].(string); ok {
				out += t
			}
		}
		return out
	}
	return ""
}

// chatOutputs returns the tool results of a Chat Completions request by call id.
func chatOutputs(body map[string]any) map[string]string {
	out := map[string]string{}
	msgs, _ := body["messages"].([]any)
	for _, it := range msgs {
		m, _ := it.(map[string]any)
		if m["role"] == "tool" {
			out[fmt.Sprint(m["tool_call_id"])] = contentString(m["content"])
		}
	}
	return out
}

// chatCompletion answers one request, streamed (server-sent chunks ending in
// [DONE]) when it asks for a stream, else as one JSON completion.
func (s *Server) chatCompletion(w http.ResponseWriter, r *http.Request, body map[string]any, n int, reply Reply) {
	id := fmt.Sprintf("chatcmpl-%d", n)
	model, _ := body["model"].(string)
	created := time.Now().Unix()
	usage := map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
	var call map[string]any
	finish := "stop"
	if reply.Call != "" {
		args, _ := json.Marshal(reply.Args)
		call = map[string]any{"index": 0, "id": fmt.Sprintf("call_%d", n), "type": "function",
			"function": map[string]any{"name": reply.Call, "arguments": string(args)}}
		finish = "tool_calls"
	}
	if stream, _ := body["stream"].(bool); !stream {
		msg := map[string]any{"role": "assistant", "content": reply.Text}
		if call != nil {
			delete(call, "index")
			msg["content"] = nil
			msg["tool_calls"] = []any{call}
		}
		standin.WriteJSON(w, http.StatusOK, map[string]any{"id": id, "object": "chat.completion", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	send := func(delta map[string]any, finish any, usage any) {
		chunk := map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		if usage != nil {
			chunk["usage"] = usage
		}
		b, _ := json.Marshal(chunk)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
	send(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	if call != nil {
		send(map[string]any{"tool_calls": []any{call}}, nil, nil)
	} else {
		for _, piece := range standin.Split(reply.Text, reply.Chunks) {
			if reply.Delay > 0 && !standin.Wait(r.Context(), reply.Delay) {
				return
			}
			send(map[string]any{"content": piece}, nil, nil)
		}
	}
	send(map[string]any{}, finish, usage)
	fmt.Fprint(w, "data: [DONE]\n\n")
	if fl != nil {
		fl.Flush()
	}
}

// Outputs returns every distinct output of calls to the named function the
// stand-in made, in the order the agent sent them back.
func (s *Server) Outputs(name string) []string {
	reqs := s.Requests()
	s.Mu.Lock()
	defer s.Mu.Unlock()
	var out []string
	seen := map[string]bool{}
	for _, r := range reqs {
		msgs, _ := r.Body["messages"].([]any)
		for _, it := range msgs {
			m, _ := it.(map[string]any)
			id := fmt.Sprint(m["tool_call_id"])
			if m["role"] == "tool" && s.calls[id] == name && !seen[id] {
				seen[id] = true
				out = append(out, contentString(m["content"]))
			}
		}
	}
	return out
}

// UserTexts returns the user texts of a Chat Completions request, oldest first.
func (r Request) UserTexts() []string {
	var out []string
	msgs, _ := r.Body["messages"].([]any)
	for _, it := range msgs {
		m, _ := it.(map[string]any)
		if m["role"] == "user" {
			out = append(out, contentString(m["content"]))
		}
	}
	return out
}
