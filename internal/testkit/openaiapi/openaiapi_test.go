package openaiapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// events posts a Responses request and returns the streamed event data.
func events(t *testing.T, srv *Server, input []any) []map[string]any {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"model": "gpt-5", "stream": true, "input": input})
	resp, err := http.Post(srv.URL+"/v1/responses", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []map[string]any
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var v map[string]any
			if err := json.Unmarshal([]byte(d), &v); err != nil {
				t.Fatal(err)
			}
			out = append(out, v)
		}
	}
	return out
}

func TestResponses(t *testing.T) {
	t.Parallel()
	srv := Start(t,
		Rule{Contains: "run", Reply: Reply{Call: "exec_command", Args: map[string]any{"cmd": "true"}}},
		Rule{Output: "exec_command", Reply: Reply{Text: "done", Chunks: 2}},
	)
	user := map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "run it"}}}
	evs := events(t, srv, []any{user})
	var types []string
	for _, e := range evs {
		types = append(types, e["type"].(string))
	}
	if got, want := strings.Join(types, ","), "response.created,response.output_item.done,response.completed"; got != want {
		t.Fatalf("events: got %s want %s", got, want)
	}
	item := evs[1]["item"].(map[string]any)
	if item["type"] != "function_call" || item["name"] != "exec_command" || item["arguments"] != `{"cmd":"true"}` {
		t.Fatalf("call item: got %v", item)
	}
	out := map[string]any{"type": "function_call_output", "call_id": item["call_id"], "output": "exit 0"}
	evs = events(t, srv, []any{user, item, out})
	var text strings.Builder
	for _, e := range evs {
		if e["type"] == "response.output_text.delta" {
			text.WriteString(e["delta"].(string))
		}
	}
	if text.String() != "done" {
		t.Errorf("text: got %q want done", text.String())
	}
	if got, ok := srv.Output("exec_command"); !ok || got != "exit 0" {
		t.Errorf("recorded output: got %q, %v", got, ok)
	}
}
