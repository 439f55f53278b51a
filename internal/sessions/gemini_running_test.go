package sessions

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/sessions/live"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/geminiapi"
	"github.com/parleyhq/parley/internal/testkit/tmuxterm"
)

// A Gemini CLI TUI a person started in a tmux pane is listed as running, in
// that pane, with the turn typed into it; a `gemini -p` run meanwhile in
// the same folder is not taken for it; once it exits it is listed as not
// running.
func TestGeminiTUIInTmuxIsFoundRunning(t *testing.T) {
	srv := geminiapi.Start(t, geminiapi.Scenario{Default: ptr(geminiapi.Text("Noted.", 1, 0))})
	home, root := t.TempDir(), t.TempDir()
	cwd := filepath.Join(root, "app")
	if err := os.Mkdir(cwd, 0o700); err != nil {
		t.Fatal(err)
	}
	env := geminiapi.Env(t, srv, home)
	tm := tmuxterm.Start(t, append(env, "TERM=xterm-256color"), "env", "-C", cwd, testkit.GeminiBin(t))
	tm.Within = 90 * time.Second
	tm.WaitScreen("Gemini's input box", tmuxterm.Has("Type your message"))
	typeIntoGemini(tm, "first prompt here")
	tm.WaitScreen("the answer", tmuxterm.Has("Noted."))
	printed := exec.Command(testkit.GeminiBin(t), "-p", "printed prompt")
	printed.Dir, printed.Env = cwd, append(os.Environ(), env...)
	if out, err := printed.CombinedOutput(); err != nil {
		t.Fatalf("gemini -p: %v\n%s", err, out)
	}

	x, err := Open(t.TempDir(), []string{root}, Gemini{Dir: filepath.Join(home, ".gemini")})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	var s, p Session
	testkit.Eventually(t, 30*time.Second, func() bool {
		l, err := x.List(context.Background(), Filter{})
		if err != nil || len(l) != 2 || l[0].Turns != 1 || l[1].Turns != 1 {
			return false
		}
		s, p = l[0], l[1]
		if s.Title != "first prompt here" {
			s, p = p, s
		}
		return true
	}, "the TUI's session and gemini -p's listed with their turns")
	if p.Running || p.Title != "printed prompt" {
		t.Fatalf("gemini -p's session listed %+v, want not running", p)
	}
	server := strings.TrimSpace(tm.Tmux("display-message", "-p", "#{socket_path}"))
	want := "tmux:" + filepath.Base(server) + ":t:0.0"
	if !s.Running || s.Where != want || s.PID <= 0 || s.Title != "first prompt here" || s.Cwd != cwd {
		t.Fatalf("listed %+v, want running in %s", s, want)
	}
	if got, ok, err := x.Lookup(context.Background(), "gemini", s.ID); !ok || err != nil || !got.Running || got.Where != want {
		t.Fatalf("lookup: %+v %v %v", got, ok, err)
	}
	if pid := live.Gemini(context.Background(), filepath.Join(home, ".gemini"))[s.ID]; pid != s.PID {
		t.Fatalf("live.Gemini says pid %d, want %d", pid, s.PID)
	}

	// Ctrl+C twice, each once the screen shows the last: /quit with Enter
	// can go to the command menu it opens instead.
	tm.Keys("C-c")
	tm.WaitScreen("Gemini asking to press again", tmuxterm.Has("Press Ctrl+C again to exit"))
	tm.Keys("C-c")
	tm.WaitScreen("Gemini gone", func(string) bool { _, ok := tm.ExitStatus(); return ok })
	l, err := x.List(context.Background(), Filter{})
	if err != nil || len(l) != 2 || l[0].Running || l[1].Running {
		t.Fatalf("after the exit: %+v %v", l, err)
	}
}

// typeIntoGemini types text into Gemini CLI's input box and, once the box
// shows it, Enter: an Enter that comes with the text, as a paste, is taken
// for a new line in the box.
func typeIntoGemini(tm *tmuxterm.Term, text string) {
	tm.T.Helper()
	tm.TypeAndEnter(text, "> "+text)
}
