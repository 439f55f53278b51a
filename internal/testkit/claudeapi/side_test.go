package claudeapi

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/testkit"
)

// oneUse is a scenario whose only rule answers once and matches the words a
// title request and a count_tokens request carry too: a side request that
// consumed it would leave the person's prompt with the default.
func oneUse() Scenario {
	used := Text("the rule was already used", 1, 0)
	return Scenario{
		Rules:   []Rule{{Match: Match{Contains: "say hi"}, Reply: Text("Hello from the only rule.", 2, 0), Times: 1}},
		Default: &used,
	}
}

// checkSideRequests: every request of kind is answered outside the scenario.
func checkSideRequests(t *testing.T, srv *Server, kind string) {
	t.Helper()
	n := 0
	for _, r := range srv.Requests() {
		if r.Kind != kind {
			continue
		}
		n++
		if r.Rule != -1 {
			t.Errorf("%s request answered by rule %d; side requests use no rule", kind, r.Rule)
		}
	}
	if n == 0 {
		t.Errorf("no %s request recorded: %s", kind, kinds(srv))
	}
}

func kinds(srv *Server) string {
	var s []string
	for _, r := range srv.Requests() {
		s = append(s, r.Method+" "+r.Path+" "+r.Kind)
	}
	return strings.Join(s, ", ")
}

// TestSideRequestsLeaveTheScenarioAlone, with the request shapes Claude Code
// 2.1.197 sends, in an order chosen so that a consumed rule would show.
func TestSideRequestsLeaveTheScenarioAlone(t *testing.T) {
	t.Parallel()
	srv := Start(t, oneUse())
	// The title request (as recorded from the real CLI: no tools, streamed, the
	// person's words inside <session>), then count_tokens with the same words.
	title := `{"stream":true,"messages":[{"role":"user","content":"<session>\nplease say hi to me now\n</session>\n\nWrite the title in the language the user wrote in, regardless of the language of the examples above."}]}`
	if _, body := post(t, srv, title); !strings.Contains(body, "Stand-in session") {
		t.Fatalf("title request answered %s", body)
	}
	resp, err := http.Post(srv.URL+"/v1/messages/count_tokens?beta=true", "application/json",
		strings.NewReader(`{"tools":[{"name":"Bash"}],"messages":[{"role":"user","content":"please say hi to me now"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(b.String(), `"input_tokens"`) {
		t.Fatalf("count_tokens answered %d %s", resp.StatusCode, b.String())
	}
	// The person's prompt still gets the one-use rule; the next one, the default.
	prompt := `{"stream":true,"tools":[{"name":"Bash"}],"messages":[{"role":"user","content":"please say hi to me now"}]}`
	if _, body := post(t, srv, prompt); func() string { s, _ := streamedText(body); return s }() != "Hello from the only rule." {
		t.Fatalf("prompt after the side requests: %s", body)
	}
	if _, body := post(t, srv, prompt); func() string { s, _ := streamedText(body); return s }() != "the rule was already used" {
		t.Fatalf("the rule answers once, yet a second prompt got %s", body)
	}
	checkSideRequests(t, srv, KindTitle)
	checkSideRequests(t, srv, KindCountTokens)
	if got := len(srv.ScenarioRequests()); got != 2 {
		t.Fatalf("scenario requests: %d, want the two prompts (%s)", got, kinds(srv))
	}
}

// TestRealClaudeSideRequestsLeaveTheScenarioAlone runs the pinned Claude Code
// in stream-json mode so that it really makes both side requests: /context
// counts tokens (count_tokens), and a first prompt of ten characters or more
// gets a session title (only with nonessential traffic allowed, so this test
// drops CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC from Env).
func TestRealClaudeSideRequestsLeaveTheScenarioAlone(t *testing.T) {
	t.Parallel()
	bin := testkit.ClaudeBin(t)
	srv := Start(t, oneUse())
	home, cwd := t.TempDir(), t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH")}
	for _, kv := range Env(t, srv, home, cwd) {
		if !strings.HasPrefix(kv, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=") {
			env = append(env, kv)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose")
	cmd.Dir, cmd.Env, cmd.WaitDelay = cwd, env, 5*time.Second
	cmd.Stdin = strings.NewReader(`{"type":"user","message":{"role":"user","content":"/context"}}` + "\n" +
		`{"type":"user","message":{"role":"user","content":"please say hi to me now"}}` + "\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("claude: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "Hello from the only rule.") || strings.Contains(string(out), "the rule was already used") {
		t.Fatalf("the person's prompt did not get the scenario's one-use rule:\n%s\nrequests: %s", out, kinds(srv))
	}
	checkSideRequests(t, srv, KindTitle)
	checkSideRequests(t, srv, KindCountTokens)
	for _, r := range srv.Requests() {
		if r.Kind == KindTitle && !strings.Contains(r.LastUserText(), "say hi") {
			t.Errorf("title request without the person's words (so it could not have matched the rule): %q", r.LastUserText())
		}
	}
	reqs := srv.ScenarioRequests()
	if len(reqs) != 1 || reqs[0].Rule != 0 {
		t.Fatalf("scenario requests: %d (%s), want one, answered by the rule", len(reqs), kinds(srv))
	}
}
