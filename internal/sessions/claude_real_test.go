package sessions

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

// claudeP runs the real `claude -p prompt [args…]` in cwd against srv.
func claudeP(t *testing.T, srv *claudeapi.Server, home, cwd, prompt string, args ...string) {
	t.Helper()
	cmd := exec.Command(testkit.ClaudeBin(t), append([]string{"-p", prompt}, args...)...)
	cmd.Dir = cwd
	cmd.Env = append(os.Environ(), claudeapi.Env(t, srv, home, cwd)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("claude -p %q: %v\n%s", prompt, err, out)
	}
}

// A session made by `claude -p` in a folder is found with its first prompt
// as title and one turn; resumed with `claude -p --resume`, it is found again
// (the same id) with two turns. With PARLEY_CAPTURE=1 the transcript is kept
// as testdata/claude-<version>-print.jsonl.
func TestClaudePrintSessionIsFound(t *testing.T) {
	srv := claudeapi.Start(t, claudeapi.Scenario{Default: &claudeapi.Reply{Blocks: []claudeapi.Block{{Type: claudeapi.BlockText, Text: "Noted."}}}})
	home, root := t.TempDir(), t.TempDir()
	cwd := filepath.Join(root, "app")
	if err := os.Mkdir(cwd, 0o700); err != nil {
		t.Fatal(err)
	}
	claudeP(t, srv, home, cwd, "first prompt here")

	x, err := Open(t.TempDir(), []string{root}, Claude{Dir: filepath.Join(home, ".claude")})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	ctx := context.Background()
	list, err := x.List(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 {
		t.Fatalf("listed %+v, want the one session", list)
	}
	s := list[0]
	if s.Agent != "claude" || s.Cwd != cwd || s.Title != "first prompt here" || s.Turns != 1 || s.Running || s.UpdatedAt.IsZero() {
		t.Fatalf("listed %+v", s)
	}
	if os.Getenv("PARLEY_CAPTURE") != "" {
		b, err := os.ReadFile(s.Path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("testdata", "claude-"+testkit.ClaudeVersion+"-print.jsonl"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	claudeP(t, srv, home, cwd, "second prompt", "--resume", s.ID)
	again, ok, err := x.Lookup(ctx, "claude", s.ID)
	if err != nil || !ok {
		t.Fatalf("lookup %s: %v %v", s.ID, ok, err)
	}
	if again.Turns != 2 || again.Title != "first prompt here" || !again.UpdatedAt.After(s.UpdatedAt) {
		t.Fatalf("after the resume: %+v (before: %+v)", again, s)
	}

	// Outside the roots it is not listed, nor found.
	y, err := Open(t.TempDir(), []string{t.TempDir()}, Claude{Dir: filepath.Join(home, ".claude")})
	if err != nil {
		t.Fatal(err)
	}
	defer y.Close()
	if list, err := y.List(ctx, Filter{All: true}); err != nil || len(list) != 0 {
		t.Fatalf("outside the roots: %+v %v", list, err)
	}
	if _, ok, err := y.Lookup(ctx, "claude", s.ID); ok || err != nil {
		t.Fatalf("outside the roots, lookup found it: %v", err)
	}
}
