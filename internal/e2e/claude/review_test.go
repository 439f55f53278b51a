//go:build e2e

package claude_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/gitwork"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

// The real Claude Code edits a file and writes a new one in a git
// repository (through the scripted API); the thread's change, as GET
// /api/threads/{id}/changes answers it, is git diff of the thread's base
// byte for byte, then the new file, and a line's comment reaches Claude Code
// as the next prompt.
func TestClaudeEditShowsInThreadChanges(t *testing.T) {
	for k, v := range map[string]string{"GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.com",
		"GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@example.com"} {
		t.Setenv(k, v) // not parallel
	}
	var sc claudeapi.Scenario
	r := newRig(t, sc, nil)
	proj := filepath.Join(r.work, "proj")
	git := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", proj}, args...)...).Output()
		if err != nil {
			t.Fatalf("git %s: %v", strings.Join(args, " "), err)
		}
		return string(out)
	}
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	greeting := filepath.Join(proj, "greeting.go")
	if err := os.WriteFile(greeting, []byte("package main\n\nfunc greet() string {\n\treturn \"hello\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("init", "-q", "-b", "main")
	git("add", "-A")
	git("commit", "-qm", "first")
	base := strings.TrimSpace(git("rev-parse", "HEAD"))
	sc = claudeapi.Scenario{Name: "review", Rules: []claudeapi.Rule{
		{Match: claudeapi.Match{Exact: "greet the world"}, Reply: claudeapi.ToolUse("Read", map[string]any{"file_path": greeting})},
		{Match: claudeapi.Match{ToolResult: "Read"}, Reply: claudeapi.ToolUse("Edit", map[string]any{
			"file_path": greeting, "old_string": "\treturn \"hello\"", "new_string": "\treturn \"hello, world\""})},
		{Match: claudeapi.Match{ToolResult: "Edit"}, Reply: claudeapi.ToolUse("Write", map[string]any{
			"file_path": filepath.Join(proj, "notes.md"), "content": "# Notes\n\n- greet the world\n"})},
		{Match: claudeapi.Match{ToolResult: "Write"}, Reply: claudeapi.Text("Done.", 1, 0)},
	}, Default: &claudeapi.Reply{Blocks: []claudeapi.Block{{Type: claudeapi.BlockText, Text: "Noted."}}}}
	r.api.SetScenario(sc)

	s := r.dial("review", -1)
	s.Send(map[string]any{"type": "message", "message_id": "m1", "text": "greet the world",
		"intent": map[string]any{"new": map[string]any{"cwd": proj, "agent": "claude"}}})
	// Both edits ask permission: allow each once.
	for n, from := 0, 0; n < 2; n++ {
		i := s.WaitFor(from, wait, chatsock.Type(chat.TypePermissionRequest), "a permission card")
		var p chat.PermissionRequest
		_ = s.Get(i).Decode(&p)
		s.Send(map[string]string{"type": "permission_response", "request_id": p.RequestID, "option_id": chat.OptionAllowOnce})
		from = i + 1
	}
	i := s.WaitFor(0, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "the turn's end")
	th := s.Get(i).Thread

	api := client.API{Server: "http://" + r.d.Addr(), Token: r.d.Token()}
	var c gitwork.Changes
	if err := api.Call(t.Context(), "GET", "/api/threads/"+string(th)+"/changes", nil, &c); err != nil {
		t.Fatal(err)
	}
	untracked, _ := exec.Command("git", "-C", proj, "diff", "--no-index", "/dev/null", "notes.md").Output()
	if want := git("diff", base) + string(untracked); c.Patch != want || c.Base != base {
		t.Fatalf("the thread's change (base %s):\n%s\nwant (base %s):\n%s", c.Base, c.Patch, base, want)
	}
	if !strings.Contains(c.Patch, "+\treturn \"hello, world\"") || len(c.Files) != 2 || c.Files[1].Path != "notes.md" || c.Files[1].Status != "untracked" {
		t.Fatalf("files %+v:\n%s", c.Files, c.Patch)
	}

	// A comment on the edited line is Claude Code's next prompt.
	var sent struct{ State string }
	if err := api.Call(t.Context(), "POST", "/api/threads/"+string(th)+"/comment?wait=30s",
		map[string]any{"path": "greeting.go", "line": 4, "text": "use a capital H", "message_id": "c1"}, &sent); err != nil || sent.State != chat.DeliverySubmitted {
		t.Fatalf("comment: %+v %v", sent, err)
	}
	r.waitTranscript(t, "Comment on `greeting.go:4`", "use a capital H")
}
