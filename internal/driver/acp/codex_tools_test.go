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
	"github.com/parleyhq/parley/internal/mcpserver"
	"github.com/parleyhq/parley/internal/testkit/openaiapi"
)

// answering is the person behind parley's MCP server: every ask is
// answered "Blue".
type answering struct{}

func (answering) Ask(context.Context, chat.ThreadID, chat.QuestionItem) ([]string, error) {
	return []string{"Blue"}, nil
}
func (answering) Notify(context.Context, chat.ThreadID, chat.Notice) error { return nil }

// Codex, given parley's MCP server in session/new, calls ask_person (as
// the model sees it: ask_person in the namespace mcp__parley). codex-acp
// asks "Approve MCP tool call" for it; parley allows it for the session
// without a card, and the person's answer is what the model gets.
func TestCodexAsksNoPermissionForParleysTools(t *testing.T) {
	t.Parallel()
	srv := openaiapi.Start(t,
		openaiapi.Rule{Contains: "ask the person", Reply: openaiapi.Reply{Call: "ask_person", Namespace: "mcp__parley",
			Args: map[string]any{"question": "Which colour?", "options": []string{"Red", "Blue"}}}},
		openaiapi.Rule{Output: "ask_person", Reply: openaiapi.Reply{Text: "Thanks for the answer."}},
	)
	tools, err := mcpserver.Listen(answering{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tools.Close(context.Background()) })
	mcp, revoke := tools.Grant("thr_codex")
	t.Cleanup(revoke)
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
	started, err := New(nil, WithTap(tap)).Start(ctx, driver.Spec{
		Command: codexBin(t), Env: openaiapi.CodexEnv(t, srv, home), Cwd: cwd, Tools: mcp,
		Options: map[string]string{OptAuthMethod: "openai-api-key"},
	}, sink)
	if err != nil {
		t.Fatalf("Start: %v\n%s", err, tap.String())
	}
	s := started.(*Session)
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	from := sink.len()
	prompt(t, s, "ask the person")
	if got := waitTurn(t, sink, from); got != chat.StopEndTurn {
		t.Fatalf("stop reason: got %q\n%s", got, sink.dump())
	}
	if n := sink.count(from, "event", "permission_request"); n != 0 {
		t.Fatalf("parley's own tool showed %d permission cards:\n%s", n, sink.dump())
	}
	if out, ok := srv.Output("ask_person"); !ok || !strings.Contains(out, "Blue") {
		t.Fatalf("the model got %q (sent %v), want the answer Blue", out, ok)
	}
	// Allowed for the session only: nothing written to the person's Codex config.
	b, _ := os.ReadFile(filepath.Join(home, ".codex", "config.toml"))
	if strings.Contains(string(b), "parley") {
		t.Fatalf("the person's Codex config now names parley:\n%s", b)
	}
}
