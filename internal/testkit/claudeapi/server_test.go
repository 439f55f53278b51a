package claudeapi

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/testkit"
)

func post(t *testing.T, srv *Server, body string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Post(srv.URL+"/v1/messages?beta=true", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sb strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		sb.WriteString(sc.Text())
		sb.WriteByte('\n')
	}
	return resp, sb.String()
}

// streamedText adds up the text_delta pieces of an SSE answer.
func streamedText(sse string) (text string, deltas int) {
	for _, line := range strings.Split(sse, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type  string `json:"type"`
			Delta struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"delta"`
		}
		if json.Unmarshal([]byte(data), &ev) == nil && ev.Delta.Type == "text_delta" {
			text += ev.Delta.Text
			deltas++
		}
	}
	return text, deltas
}

func TestMatching(t *testing.T) {
	t.Parallel()
	sc, err := LoadScenario("testdata/bash-and-hello.json")
	if err != nil {
		t.Fatal(err)
	}
	srv := Start(t, sc)
	reminder := `{"type":"text","text":"<system-reminder>x</system-reminder>"}`
	tools := `"tools":[{"name":"Bash"}]`
	tests := []struct {
		name, body string
		wantText   string
		wantDeltas int
		wantKind   string
		wantStatus int
	}{
		{"exact after reminder", `{"stream":true,` + tools + `,"messages":[{"role":"user","content":[` + reminder + `,{"type":"text","text":"say hi"}]}]}`,
			"Hello there, friend.", 3, KindScenario, 200},
		{"last user message, system entries skipped", `{"stream":true,` + tools + `,"messages":[{"role":"user","content":"run it now"},{"role":"system","content":"x"}]}`,
			"Running.", 1, KindScenario, 200},
		{"unmatched gets the default", `{"stream":true,` + tools + `,"messages":[{"role":"user","content":"what?"}]}`,
			"I have no script for that.", 1, KindScenario, 200},
		{"title request is a side request", `{"stream":true,"messages":[{"role":"user","content":"<session>say hi</session>"}]}`,
			`{"title": "Stand-in session"}`, 1, KindTitle, 200},
		{"529 once", `{"stream":true,` + tools + `,"messages":[{"role":"user","content":"busy now"}]}`, "", 0, KindScenario, 529},
		{"then the default", `{"stream":true,` + tools + `,"messages":[{"role":"user","content":"busy now"}]}`, "I have no script for that.", 1, KindScenario, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := post(t, srv, tt.body)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status: got %d want %d (%s)", resp.StatusCode, tt.wantStatus, body)
			}
			text, n := streamedText(body)
			if text != tt.wantText || n != tt.wantDeltas {
				t.Errorf("got %q in %d deltas, want %q in %d", text, n, tt.wantText, tt.wantDeltas)
			}
			reqs := srv.Requests()
			if got := reqs[len(reqs)-1].Kind; got != tt.wantKind {
				t.Errorf("kind: got %q want %q", got, tt.wantKind)
			}
		})
	}
}

func TestToolResultAnsweredOnce(t *testing.T) {
	t.Parallel()
	srv := Start(t, Scenario{Rules: []Rule{
		{Match: Match{Exact: "go"}, Reply: Bash("true", "nothing")},
		{Match: Match{ToolResult: "Bash"}, Reply: Text("after the tool", 1, 0)},
		{Match: Match{Exact: "next"}, Reply: Text("the next answer", 1, 0)},
	}})
	_, _ = post(t, srv, `{"stream":true,"tools":[{}],"messages":[{"role":"user","content":"go"}]}`)
	ids := srv.ToolUseIDs("Bash")
	if len(ids) != 1 {
		t.Fatalf("tool use ids: got %v want one", ids)
	}
	result := `{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + ids[0] + `","content":"ok"}]}`
	_, body := post(t, srv, `{"stream":true,"tools":[{}],"messages":[{"role":"user","content":"go"},`+result+`]}`)
	if got, _ := streamedText(body); got != "after the tool" {
		t.Fatalf("tool result answer: got %q", got)
	}
	// The answered result stays in history; the merged next prompt gets answered as text.
	merged := `{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + ids[0] + `","content":"ok"},{"type":"text","text":"next"}]}`
	_, body = post(t, srv, `{"stream":true,"tools":[{}],"messages":[`+merged+`]}`)
	if got, _ := streamedText(body); got != "the next answer" {
		t.Fatalf("merged prompt: got %q want %q", got, "the next answer")
	}
	if c, ok := srv.ToolResultFor("Bash"); !ok || c.ResultText() != "ok" {
		t.Errorf("ToolResultFor: got %+v %v", c, ok)
	}
}

func TestSideRequests(t *testing.T) {
	t.Parallel()
	srv := Start(t, Scenario{})
	tests := []struct{ method, path, body, want string }{
		{"GET", "/v1/models", "", "{}"},
		{"POST", "/v1/messages/count_tokens", `{}`, `{"input_tokens":100}`},
		{"POST", "/v1/messages", `{"messages":[{"role":"user","content":"x"}]}`, `"stand-in side reply"`},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(tt.method, srv.URL+tt.path, strings.NewReader(tt.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var sb strings.Builder
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			sb.WriteString(sc.Text())
		}
		resp.Body.Close()
		if !strings.Contains(sb.String(), tt.want) {
			t.Errorf("%s %s: got %s want it to hold %s", tt.method, tt.path, sb.String(), tt.want)
		}
	}
	if n := len(srv.ScenarioRequests()); n != 0 {
		t.Errorf("scenario requests: got %d want 0", n)
	}
}

// TestRealClaudePrintMode runs the pinned Claude Code against the stand-in.
func TestRealClaudePrintMode(t *testing.T) {
	t.Parallel()
	bin := testkit.ClaudeBin(t)
	srv := Start(t, Scenario{Rules: []Rule{{Match: Match{Exact: "say hi"}, Reply: Text("Hello from the stand-in.", 4, 0)}}})
	home, cwd := t.TempDir(), t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-p", "say hi")
	cmd.Dir = cwd
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, Env(t, srv, home, cwd)...)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("claude -p: %v\n%s", err, out)
	}
	if got, want := strings.TrimSpace(string(out)), "Hello from the stand-in."; got != want {
		t.Errorf("got %q want %q", got, want)
	}
	reqs := srv.ScenarioRequests()
	if len(reqs) != 1 || reqs[0].LastUserText() != "say hi" {
		t.Errorf("scenario requests: got %d, last text %q", len(reqs), func() string {
			if len(reqs) == 0 {
				return ""
			}
			return reqs[0].LastUserText()
		}())
	}
	if _, err := os.Stat(filepath.Join(home, ".claude.json")); err != nil {
		t.Error(err)
	}
}

func TestErrorsAndBlocks(t *testing.T) {
	t.Parallel()
	srv := Start(t, Scenario{Rules: []Rule{
		{Match: Match{Exact: "cut"}, Reply: Reply{Blocks: []Block{{Type: BlockText, Text: "abcdefgh", Chunks: 4}},
			Error: &Error{CutAfter: 2}}},
		{Match: Match{Exact: "in stream"}, Reply: Reply{Blocks: []Block{{Type: BlockText, Text: "abcd", Chunks: 4}},
			Error: &Error{InStream: true, CutAfter: 1}}},
		{Match: Match{Exact: "several"}, Reply: Reply{Blocks: []Block{
			{Type: BlockThinking, Text: "hm"}, {Type: BlockText, Text: "ok"},
			{Type: BlockToolUse, Name: "Write", Input: []byte(`{"file_path":"/tmp/x","content":"y"}`), Chunks: 3}}}},
	}})
	tools := `"tools":[{}]`
	tests := []struct {
		prompt     string
		wantText   string
		wantHolds  []string
		wantAbsent []string
	}{
		{"cut", "abcd", nil, []string{"message_stop"}},
		{"in stream", "a", []string{"event: error", "overloaded_error"}, []string{"message_stop"}},
		{"several", "ok", []string{"thinking_delta", "input_json_delta", `"stop_reason":"tool_use"`, "message_stop"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.prompt, func(t *testing.T) {
			_, body := post(t, srv, `{"stream":true,`+tools+`,"messages":[{"role":"user","content":"`+tt.prompt+`"}]}`)
			if got, _ := streamedText(body); got != tt.wantText {
				t.Errorf("text: got %q want %q", got, tt.wantText)
			}
			for _, w := range tt.wantHolds {
				if !strings.Contains(body, w) {
					t.Errorf("stream lacks %q:\n%s", w, body)
				}
			}
			for _, w := range tt.wantAbsent {
				if strings.Contains(body, w) {
					t.Errorf("stream holds %q:\n%s", w, body)
				}
			}
		})
	}
	// Non-streamed, the same scenario answers as one message.
	_, body := post(t, srv, `{`+tools+`,"messages":[{"role":"user","content":"several"}]}`)
	if !strings.Contains(body, `"type":"tool_use"`) || !strings.Contains(body, `"stop_reason":"tool_use"`) {
		t.Errorf("non-streamed: got %s", body)
	}
}
