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
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/openaiapi"
)

// codexBin is the pinned codex-acp (@zed-industries/codex-acp 0.16.0, a native
// binary in a registry package) in .cache/npm/codex-acp, where scripts/test.sh
// installs it (install_agent codex-acp @zed-industries/codex-acp 0.16.0).
func codexBin(t *testing.T) string {
	t.Helper()
	return testkit.AgentBin(t, "PARLEY_TEST_CODEX_ACP", "codex-acp")
}

func startCodex(t *testing.T, srv *openaiapi.Server) (*Session, *recSink, string, *lineBuf) {
	t.Helper()
	home := t.TempDir()
	cwd := filepath.Join(t.TempDir(), "work")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	tap := &lineBuf{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("ACP transcript:\n%s", tap.String())
		}
	})
	sink := &recSink{}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := New(nil, WithTap(tap)).Start(ctx, driver.Spec{
		Command: codexBin(t), Env: openaiapi.CodexEnv(t, srv, home), Cwd: cwd,
		Options: map[string]string{OptAuthMethod: "openai-api-key"},
	}, sink)
	if err != nil {
		t.Fatalf("Start: %v\n%s", err, tap.String())
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s.(*Session), sink, cwd, tap
}

func TestCodexPlainTurn(t *testing.T) {
	t.Parallel()
	const want = "Hello from the Responses stand-in."
	srv := openaiapi.Start(t, openaiapi.Rule{Contains: "say hi", Reply: openaiapi.Reply{Text: want, Chunks: 4}})
	s, sink, _, _ := startCodex(t, srv)
	from := sink.len()
	prompt(t, s, "say hi")
	if got := waitTurn(t, sink, from); got != chat.StopEndTurn {
		t.Fatalf("stop reason: got %q\n%s", got, sink.dump())
	}
	if got := sink.text(from); !strings.Contains(got, want) {
		t.Errorf("agent text: got %q want %q", got, want)
	}
}

func TestCodexShellPermission(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		kind       string
		wantRan    bool
		wantReason string
	}{
		{name: "allow", kind: chat.OptionAllowOnce, wantRan: true, wantReason: chat.StopEndTurn},
		// codex-acp 0.16.0's only reject option is "abort": it ends the turn.
		{name: "reject", kind: chat.OptionRejectOnce, wantRan: false, wantReason: chat.StopCancelled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := openaiapi.Start(t,
				openaiapi.Rule{Contains: "run the command", Reply: openaiapi.Reply{Call: "exec_command", Args: map[string]any{
					"cmd": "printf '%s-%s\\n' parley codex", "sandbox_permissions": "require_escalated", "justification": "May I print a marker?",
				}}},
				openaiapi.Rule{Output: "exec_command", Reply: openaiapi.Reply{Text: "The command is done."}},
			)
			s, sink, _, _ := startCodex(t, srv)
			from := sink.len()
			prompt(t, s, "run the command")
			req := waitPayload[chat.PermissionRequest](t, sink, from, "permission_request")
			if req.Tool.Name != "execute" || !strings.Contains(req.Tool.Title, "parley codex") {
				t.Errorf("card tool: got %+v want the execute call", req.Tool)
			}
			if err := s.AnswerPermission(context.Background(), req.RequestID, driver.PermissionAnswer{OptionID: optionOfKind(t, req, tt.kind)}); err != nil {
				t.Fatalf("AnswerPermission: %v", err)
			}
			if got := waitTurn(t, sink, from); got != tt.wantReason {
				t.Fatalf("stop reason: got %q want %q\n%s", got, tt.wantReason, sink.dump())
			}
			out, ok := srv.Output("exec_command")
			if got := ok && strings.Contains(out, "parley-codex"); got != tt.wantRan {
				t.Errorf("command output reached the model: got %v want %v (output %q, sent %v)", got, tt.wantRan, out, ok)
			}
			if tt.wantRan && !strings.Contains(sink.text(from), "The command is done.") {
				t.Errorf("agent text: got %q want the stand-in's answer to the output", sink.text(from))
			}
		})
	}
}
