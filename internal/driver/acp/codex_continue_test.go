package acp

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/testkit/openaiapi"
)

// A session made through the real codex-acp in a folder (as an editor makes
// one), with a command it ran: parley reads its turns back from Codex's
// rollout (History: the prompt, the command ended with its output, the
// answer), and a new codex-acp continues it: the model's next request holds
// the earlier turn.
func TestCodexSessionContinued(t *testing.T) {
	t.Parallel()
	srv := openaiapi.Start(t,
		openaiapi.Rule{Contains: "run the command", Reply: openaiapi.Reply{Call: "exec_command", Args: map[string]any{
			"cmd": "printf '%s-%s\\n' parley codex", "sandbox_permissions": "require_escalated", "justification": "May I print a marker?",
		}}},
		openaiapi.Rule{Output: "exec_command", Reply: openaiapi.Reply{Text: "The command is done."}},
		openaiapi.Rule{Contains: "what did I ask", Reply: openaiapi.Reply{Text: "To run a command."}},
	)
	home := t.TempDir()
	cwd := filepath.Join(t.TempDir(), "work")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	spec := driver.Spec{AgentID: "codex", Command: codexBin(t), Env: openaiapi.CodexEnv(t, srv, home), Cwd: cwd,
		Options: map[string]string{OptAuthMethod: "openai-api-key"}}
	start := func(spec driver.Spec) (*Session, *recSink) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		sink := &recSink{}
		s, err := New(nil).Start(ctx, spec, sink)
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		t.Cleanup(func() { _ = s.Close(context.Background()) })
		return s.(*Session), sink
	}

	s, sink := start(spec)
	prompt(t, s, "run the command")
	req := waitPayload[chat.PermissionRequest](t, sink, 0, "permission_request")
	if err := s.AnswerPermission(context.Background(), req.RequestID, driver.PermissionAnswer{OptionID: optionOfKind(t, req, chat.OptionAllowOnce)}); err != nil {
		t.Fatal(err)
	}
	if got := waitTurn(t, sink, 0); got != chat.StopEndTurn {
		t.Fatalf("stop reason %q\n%s", got, sink.dump())
	}
	s.mu.Lock()
	id := string(s.id)
	s.mu.Unlock()
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	spec.ResumeID = id
	turns, err := New(nil).History(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tn := range turns {
		line := tn.Role + ":" + tn.Text
		if tn.Tool != nil {
			line = tn.Role + ":" + tn.Tool.Kind + " " + tn.Tool.Status + " " + tn.Tool.Title
			if tn.Result == nil || !strings.Contains(tn.Result.Output, "parley-codex") {
				t.Errorf("the command's output: %+v", tn.Result)
			}
		}
		got = append(got, line)
	}
	want := []string{"user:run the command", "tool:execute completed printf '%s-%s\\n' parley codex", "agent:The command is done."}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("history:\n got %q\nwant %q", got, want)
	}

	again, sink := start(spec)
	prompt(t, again, "what did I ask")
	if got := waitTurn(t, sink, 0); got != chat.StopEndTurn {
		t.Fatalf("continued: stop reason %q\n%s", got, sink.dump())
	}
	asked := false
	for _, r := range srv.Requests() {
		if raw := string(r.Raw); strings.Contains(raw, "what did I ask") {
			asked = true
			if !strings.Contains(raw, "run the command") || !strings.Contains(raw, "parley-codex") {
				t.Errorf("the model's request after continuing lacks the earlier turn: %.2000s", raw)
			}
		}
	}
	if !asked {
		t.Error("the continued session's prompt never reached the model")
	}
}
