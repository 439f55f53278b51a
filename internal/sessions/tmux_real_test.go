package sessions

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
	"github.com/parleyhq/parley/internal/testkit/tmuxterm"
)

// A Claude Code TUI a person started in a tmux pane is listed as running,
// in that pane, titled as Claude Code titled it (its title request, which the
// stand-in answers "Stand-in session"); once it exits it is listed as not
// running.
func TestClaudeTUIInTmuxIsFoundRunning(t *testing.T) {
	srv := claudeapi.Start(t, claudeapi.Scenario{Default: &claudeapi.Reply{Blocks: []claudeapi.Block{{Type: claudeapi.BlockText, Text: "Noted."}}}})
	home, root := t.TempDir(), t.TempDir()
	cwd := filepath.Join(root, "app")
	if err := os.Mkdir(cwd, 0o700); err != nil {
		t.Fatal(err)
	}
	env := claudeapi.Env(t, srv, home, cwd)
	tm := tmuxterm.Start(t, append(env, "TERM=xterm-256color"), "env", "-C", cwd, testkit.ClaudeBin(t))
	tm.Within = 60 * time.Second
	tm.WaitScreen("Claude Code's input box", tmuxterm.Has("❯"))
	tm.TypeLine("first prompt here")
	tm.WaitScreen("the answer", tmuxterm.Has("Noted."))

	x, err := Open(t.TempDir(), []string{root}, Claude{Dir: filepath.Join(home, ".claude")})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	// Claude Code writes its transcript a moment after it draws the answer.
	var s Session
	testkit.Eventually(t, 30*time.Second, func() bool {
		l, err := x.List(context.Background(), Filter{})
		if err != nil || len(l) != 1 || l[0].Turns != 1 || l[0].Title != "Stand-in session" {
			return false
		}
		s = l[0]
		return true
	}, "the TUI's session listed with its turn and Claude Code's title")
	server := strings.TrimSpace(tm.Tmux("display-message", "-p", "#{socket_path}"))
	want := "tmux:" + filepath.Base(server) + ":t:0.0"
	if !s.Running || s.Where != want || s.PID <= 0 || s.Title != "Stand-in session" || s.Turns != 1 || s.Cwd != cwd {
		t.Fatalf("listed %+v, want running in %s", s, want)
	}
	if got, ok, err := x.Lookup(context.Background(), "claude", s.ID); !ok || err != nil || !got.Running || got.Where != want {
		t.Fatalf("lookup: %+v %v %v", got, ok, err)
	}
	// The pane by the id tmux gave it, the name adopting it uses.
	paneID := strings.TrimSpace(tm.Tmux("display-message", "-p", "-t", "t", "#{pane_id}"))
	if p, ok := Locate(context.Background(), s.PID); !ok || p.ID != paneID || p.Server != filepath.Base(server) || p.Target != "t:0.0" {
		t.Fatalf("Locate(%d) = %+v %v, want pane %s", s.PID, p, ok, paneID)
	}

	tm.TypeLine("/exit")
	tm.WaitScreen("Claude Code gone", func(string) bool { _, ok := tm.ExitStatus(); return ok })
	capture(t, s.Path, "claude-"+testkit.ClaudeVersion+"-tui.jsonl")
	if s := listOne(t, x); s.Running || s.Where != "" || s.PID != 0 {
		t.Fatalf("after the exit: %+v", s)
	}
}
