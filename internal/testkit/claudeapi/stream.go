package claudeapi

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/parleyhq/parley/internal/testkit/standin"
)

var msgSeq atomic.Int64

func newMessageID() string {
	return fmt.Sprintf("msg_standin_%06d", msgSeq.Add(1))
}

func (r Reply) stopReason() string {
	if r.StopReason != "" {
		return r.StopReason
	}
	for _, b := range r.Blocks {
		if b.Type == BlockToolUse {
			return "tool_use"
		}
	}
	return "end_turn"
}

func (r Reply) usage() (in, out int) {
	return cmp.Or(r.InputTokens, 10), cmp.Or(r.OutputTokens, 5)
}

func (b Block) input() json.RawMessage {
	if len(b.Input) == 0 {
		return json.RawMessage(`{}`)
	}
	return b.Input
}

// wholeMessage is the reply as one non-streamed Messages API response.
func wholeMessage(model string, r Reply) map[string]any {
	content := make([]map[string]any, 0, len(r.Blocks))
	for _, b := range r.Blocks {
		switch b.Type {
		case BlockToolUse:
			content = append(content, map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": b.input()})
		case BlockThinking:
			content = append(content, map[string]any{"type": "thinking", "thinking": b.Text, "signature": "standin"})
		default:
			content = append(content, map[string]any{"type": "text", "text": b.Text})
		}
	}
	in, out := r.usage()
	return map[string]any{
		"id": newMessageID(), "type": "message", "role": "assistant", "model": model,
		"content": content, "stop_reason": r.stopReason(), "stop_sequence": nil,
		"usage": map[string]int{"input_tokens": in, "output_tokens": out},
	}
}

type sse struct {
	w      http.ResponseWriter
	f      http.Flusher
	r      *http.Request
	deltas int
}

func (s *sse) send(event string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		panic(fmt.Sprintf("claudeapi: sse: %v", err))
	}
	fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", event, b)
	s.f.Flush()
}

// wait pauses for d, or aborts the handler when the client went away.
func (s *sse) wait(d time.Duration) {
	if d > 0 && !standin.Wait(s.r.Context(), d) {
		panic(http.ErrAbortHandler)
	}
}

// streamReply plays r as server-sent events, as the real API streams.
func streamReply(w http.ResponseWriter, req *http.Request, model string, r Reply) {
	f, ok := w.(http.Flusher)
	if !ok {
		standin.WriteJSON(w, http.StatusInternalServerError, errorBody("api_error", "stand-in: no flusher"))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	s := &sse{w: w, f: f, r: req}
	in, out := r.usage()
	s.send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": newMessageID(), "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]int{"input_tokens": in, "output_tokens": 1},
	}})
	e := r.Error
	delta := func(idx int, d map[string]any, pace Duration) {
		if g := r.Hold; g != nil && s.deltas == g.after && !g.wait(req, func() { s.send("ping", map[string]string{"type": "ping"}) }) {
			panic(http.ErrAbortHandler) // the client went away while held
		}
		s.wait(time.Duration(pace))
		if e != nil && e.CutAfter > 0 && s.deltas >= e.CutAfter {
			if e.InStream {
				s.send("error", errorBody(cmp.Or(e.Type, "overloaded_error"), cmp.Or(e.Message, "Overloaded")))
			}
			panic(http.ErrAbortHandler) // drops the connection mid-stream
		}
		s.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": d})
		s.deltas++
	}
	for i, b := range r.Blocks {
		switch b.Type {
		case BlockToolUse:
			s.send("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": map[string]any{}}})
			for _, part := range standin.Split(string(b.input()), b.Chunks) {
				delta(i, map[string]any{"type": "input_json_delta", "partial_json": part}, b.Delay)
			}
		case BlockThinking:
			s.send("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}})
			for _, part := range standin.Split(b.Text, b.Chunks) {
				delta(i, map[string]any{"type": "thinking_delta", "thinking": part}, b.Delay)
			}
			s.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "signature_delta", "signature": "standin"}})
		default:
			s.send("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""}})
			for _, part := range standin.Split(b.Text, b.Chunks) {
				delta(i, map[string]any{"type": "text_delta", "text": part}, b.Delay)
			}
		}
		s.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	if e != nil && (e.InStream || e.CutAfter > 0) {
		// The cut point lies past the last delta: cut before the end.
		if e.InStream {
			s.send("error", errorBody(cmp.Or(e.Type, "overloaded_error"), cmp.Or(e.Message, "Overloaded")))
		}
		panic(http.ErrAbortHandler)
	}
	s.send("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": r.stopReason(), "stop_sequence": nil},
		"usage": map[string]int{"output_tokens": out}})
	s.send("message_stop", map[string]any{"type": "message_stop"})
}
