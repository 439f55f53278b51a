package geminiapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/testkit"
)

// post sends a Gemini API request and returns the status and the body's
// responses (one, or one per server-sent event).
func post(t *testing.T, srv *Server, method string, body any) (int, []map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	url := srv.URL + "/v1beta/models/gemini-test:" + method
	if method == "streamGenerateContent" {
		url += "?alt=sse"
	}
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []map[string]any
	if method != "streamGenerateContent" || resp.StatusCode != http.StatusOK {
		var v map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&v)
		return resp.StatusCode, append(out, v)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var v map[string]any
			if err := json.Unmarshal([]byte(d), &v); err != nil {
				t.Fatalf("bad event %q: %v", d, err)
			}
			out = append(out, v)
		}
	}
	return resp.StatusCode, out
}

func userText(s string) map[string]any {
	return map[string]any{"contents": []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": s}}}}}
}

// partsOf flattens the parts of every response.
func partsOf(rs []map[string]any) []map[string]any {
	var out []map[string]any
	for _, r := range rs {
		cands, _ := r["candidates"].([]any)
		for _, c := range cands {
			content, _ := c.(map[string]any)["content"].(map[string]any)
			parts, _ := content["parts"].([]any)
			for _, p := range parts {
				out = append(out, p.(map[string]any))
			}
		}
	}
	return out
}

func textOf(rs []map[string]any) string {
	var sb strings.Builder
	for _, p := range partsOf(rs) {
		if s, ok := p["text"].(string); ok && p["thought"] == nil {
			sb.WriteString(s)
		}
	}
	return sb.String()
}

func TestScenarioFile(t *testing.T) {
	t.Parallel()
	sc, err := LoadScenario("testdata/shell-and-hello.json")
	if err != nil {
		t.Fatal(err)
	}
	srv := Start(t, sc)
	tests := []struct {
		name       string
		method     string
		body       any
		wantStatus int
		wantText   string
		wantEvents int // > 0: at least this many stream events
		wantCall   string
	}{
		{name: "streamed text", method: "streamGenerateContent", body: userText("please say hi"), wantStatus: 200, wantText: "Hello from the stand-in.", wantEvents: 4},
		{name: "same, not streamed", method: "generateContent", body: userText("say hi"), wantStatus: 200, wantText: "Hello from the stand-in."},
		{name: "function call", method: "streamGenerateContent", body: userText("run the command"), wantStatus: 200, wantCall: "run_shell_command"},
		{name: "function response", method: "streamGenerateContent", wantStatus: 200, wantText: "The command ran.", body: map[string]any{"contents": []any{
			map[string]any{"role": "user", "parts": []any{map[string]any{"text": "run the command"}}},
			map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": map[string]any{"name": "run_shell_command", "args": map[string]any{}}}}},
			map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{"name": "run_shell_command", "response": map[string]any{"output": "stand-in"}}}}},
		}}},
		{name: "error once", method: "streamGenerateContent", body: userText("fail now"), wantStatus: 503},
		{name: "error used up", method: "generateContent", body: userText("fail now"), wantStatus: 200, wantText: `(stand-in: no rule for "fail now")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, rs := post(t, srv, tt.method, tt.body)
			if status != tt.wantStatus {
				t.Fatalf("status: got %d want %d (%v)", status, tt.wantStatus, rs)
			}
			if status != 200 {
				return
			}
			if got := textOf(rs); tt.wantText != "" && got != tt.wantText {
				t.Errorf("text: got %q want %q", got, tt.wantText)
			}
			if tt.wantEvents > 0 && len(rs) < tt.wantEvents {
				t.Errorf("events: got %d want at least %d", len(rs), tt.wantEvents)
			}
			if tt.wantCall != "" {
				var names []string
				for _, p := range partsOf(rs) {
					if fc, ok := p["functionCall"].(map[string]any); ok {
						names = append(names, fc["name"].(string))
					}
				}
				if !reflect.DeepEqual(names, []string{tt.wantCall}) {
					t.Errorf("function calls: got %v want [%s]", names, tt.wantCall)
				}
			}
			last := rs[len(rs)-1]["candidates"].([]any)[0].(map[string]any)
			if last["finishReason"] != "STOP" {
				t.Errorf("last finishReason: got %v want STOP", last["finishReason"])
			}
		})
	}
	fr, ok := srv.FunctionResponse("run_shell_command")
	if !ok || !strings.Contains(string(fr.Response), "stand-in") {
		t.Errorf("recorded function response: got %s, %v", fr.Response, ok)
	}
	if got, want := len(srv.ScenarioRequests()), len(tests); got != want {
		t.Errorf("recorded scenario requests: got %d want %d", got, want)
	}
}

func TestSchemaRequests(t *testing.T) {
	t.Parallel()
	srv := Start(t, Scenario{Schema: map[string]any{"complexity_score": 42}})
	tests := []struct {
		name   string
		schema map[string]any
		want   map[string]any
	}{
		{name: "router classifier", schema: map[string]any{"type": "OBJECT", "properties": map[string]any{
			"complexity_reasoning": map[string]any{"type": "STRING"},
			"complexity_score":     map[string]any{"type": "INTEGER"},
		}}, want: map[string]any{"complexity_reasoning": "stand-in complexity_reasoning", "complexity_score": 42.0}},
		{name: "next speaker", schema: map[string]any{"type": "object", "properties": map[string]any{
			"reasoning":    map[string]any{"type": "string"},
			"next_speaker": map[string]any{"type": "string", "enum": []any{"model", "user"}},
		}}, want: map[string]any{"reasoning": "stand-in reasoning", "next_speaker": "user"}},
		{name: "enums, arrays, numbers", schema: map[string]any{"type": "object", "properties": map[string]any{
			"kind":  map[string]any{"type": "string", "enum": []any{"a", "b"}},
			"list":  map[string]any{"type": "array", "items": map[string]any{"type": "boolean"}},
			"count": map[string]any{"type": "number", "minimum": 3.0},
		}}, want: map[string]any{"kind": "a", "list": []any{false}, "count": 3.0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := userText("classify this")
			body["generationConfig"] = map[string]any{"responseJsonSchema": tt.schema, "responseMimeType": "application/json"}
			status, rs := post(t, srv, "generateContent", body)
			if status != 200 {
				t.Fatalf("status %d", status)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(textOf(rs)), &got); err != nil {
				t.Fatalf("answer is not JSON: %v (%q)", err, textOf(rs))
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("answer: got %v want %v", got, tt.want)
			}
		})
	}
	if n := len(srv.ScenarioRequests()); n != 0 {
		t.Errorf("schema requests counted as model turns: %d", n)
	}
}

func TestCutStreamAndClientGone(t *testing.T) {
	t.Parallel()
	srv := Start(t, Scenario{Rules: []Rule{
		{Match: Match{Contains: "cut"}, Reply: Reply{Parts: []Part{{Type: PartText, Text: "abcdef", Chunks: 6}}, Error: &Error{CutAfter: 2}}},
		{Match: Match{Contains: "slow"}, Reply: Text("a very slow reply", 100, time.Second)},
	}})
	_, rs := post(t, srv, "streamGenerateContent", userText("cut"))
	if got := textOf(rs); got != "a" && got != "ab" {
		t.Errorf("text before the cut: got %q want the first chunks only", got)
	}
	// A client that goes away ends a slow stream at once.
	ctx, cancel := context.WithCancel(context.Background())
	b, _ := json.Marshal(userText("slow"))
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1beta/models/m:streamGenerateContent?alt=sse", bytes.NewReader(b))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1)
	_, _ = resp.Body.Read(buf)
	cancel()
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// TestRealGemini runs the pinned Gemini CLI headless against the stand-in:
// the environment Env writes is enough for a prompt to go through, quickly.
func TestRealGemini(t *testing.T) {
	t.Parallel()
	srv := Start(t, Scenario{Rules: []Rule{{Match: Match{Contains: "say hi"}, Reply: Text("Hi from the stand-in.", 3, 0)}}})
	home := t.TempDir()
	cwd := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, testkit.GeminiBin(t), "-p", "say hi")
	cmd.Dir = cwd
	cmd.Env = append(os.Environ(), Env(t, srv, home)...)
	cmd.WaitDelay = 2 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gemini -p: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "Hi from the stand-in.") {
		t.Errorf("output: got %q want the stand-in's words", out)
	}
	kinds := map[string]int{}
	for _, r := range srv.Requests() {
		kinds[r.Kind]++
	}
	t.Logf("requests by kind: %v", kinds)
	if kinds[KindScenario] == 0 {
		t.Errorf("no model turn reached the stand-in: %v", kinds)
	}
	if _, err := os.Stat(filepath.Join(home, ".gemini", "settings.json")); err != nil {
		t.Errorf("settings.json: %v", err)
	}
}
