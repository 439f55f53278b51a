// Package tmuxterm is a real terminal for tests: a program (say `parley
// chat`) run in a tmux server of the test's own, typed into with send-keys
// and read with capture-pane, as a person at a terminal would.
package tmuxterm

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/testkit"
)

// Term is the terminal: an 80×24 window "t" running one program.
type Term struct {
	T      *testing.T    // the test a failed wait fails (a subtest sets its own)
	Within time.Duration // how long WaitScreen waits (default 15s)
	sock   string
	status string // file the program's exit status is written to
}

var sockSeq atomic.Int64

// Start runs argv in a new terminal with env added to tmux's; the tmux
// server goes with the test.
func Start(t *testing.T, env []string, argv ...string) *Term {
	t.Helper()
	testkit.NeedsTmux(t)
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is required for the terminal tests: ", err)
	}
	tm := &Term{T: t, sock: fmt.Sprintf("ptui-%d-%d", os.Getpid(), sockSeq.Add(1))}
	conf := filepath.Join(t.TempDir(), "tmux.conf")
	if err := os.WriteFile(conf, []byte("set -g remain-on-exit on\nset -g status off\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The program runs under sh, which waits for it and writes its exit
	// status: tmux (3.3a, here) sometimes never reaps a pane's process, and
	// then never learns its status.
	tm.status = filepath.Join(t.TempDir(), "status")
	args := []string{"-f", conf, "new-session", "-d", "-x", "80", "-y", "24", "-s", "t", "-e", "STATUS_FILE=" + tm.status}
	for _, kv := range env {
		args = append(args, "-e", kv)
	}
	args = append(args, "sh", "-c", `"$@"; echo $? > "$STATUS_FILE"`, "sh")
	args = append(args, argv...)
	t.Cleanup(func() {
		path, _ := exec.Command("tmux", "-L", tm.sock, "display-message", "-p", "#{socket_path}").Output()
		exec.Command("tmux", "-L", tm.sock, "kill-server").Run()
		if p := strings.TrimSpace(string(path)); p != "" {
			os.Remove(p) // tmux leaves its socket file behind
		}
	})
	// new-session starts the server, whose environment every pane inherits.
	start := exec.Command("tmux", append([]string{"-L", tm.sock}, args...)...)
	start.Env = personEnv(os.Environ())
	if out, err := start.CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	return tm
}

// personEnv is env as a person's terminal has it: without the markers a CI
// runner sets (CI=true, GITHUB_ACTIONS, CI_*), which some agents read as
// "no one is at this terminal" (Gemini CLI then runs headless and exits).
func personEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "CI", k == "CONTINUOUS_INTEGRATION", k == "GITHUB_ACTIONS",
			k == "BUILD_NUMBER", k == "RUN_ID", strings.HasPrefix(k, "CI_"):
			continue
		}
		out = append(out, kv)
	}
	return out
}

// Tmux runs a tmux command on the terminal's server.
func (tm *Term) Tmux(args ...string) string {
	tm.T.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", tm.sock}, args...)...).CombinedOutput()
	if err != nil {
		tm.T.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// ExitStatus is the program's exit status, once it has exited.
func (tm *Term) ExitStatus() (string, bool) {
	b, err := os.ReadFile(tm.status)
	if err != nil || !bytes.HasSuffix(b, []byte("\n")) {
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

// Screen is what the terminal shows now.
func (tm *Term) Screen() string { return tm.Tmux("capture-pane", "-p", "-t", "t") }

// TypeLine types text literally, then Enter.
func (tm *Term) TypeLine(text string) {
	tm.T.Helper()
	tm.Tmux("send-keys", "-t", "t", "-l", text)
	tm.Tmux("send-keys", "-t", "t", "Enter")
}

// Keys sends keys by tmux's names ("C-t", "Enter", "1").
func (tm *Term) Keys(keys ...string) {
	tm.T.Helper()
	tm.Tmux(append([]string{"send-keys", "-t", "t"}, keys...)...)
}

// typingGap is the least time between a person's last typed key and their
// Enter. Gemini CLI 0.61.0 takes an Enter within 30 ms of typed text as a new
// line in it, not a submit (its FAST_RETURN_TIMEOUT): a rule kept in time,
// so a test typing as a person waits it out in time, with room.
const typingGap = 150 * time.Millisecond

// TypeAndEnter types text literally, waits until the screen holds shown,
// and presses Enter as a person would after typing (typingGap later).
func (tm *Term) TypeAndEnter(text, shown string) {
	tm.T.Helper()
	tm.Tmux("send-keys", "-t", "t", "-l", text)
	tm.WaitScreen("the typed text", Has(shown))
	time.Sleep(typingGap)
	tm.Keys("Enter")
}

// Search searches parley chat's threads as a person does: Ctrl+T opens the
// thread picker, / starts the query, and Enter sends it once the search line
// shows it whole. What it finds is the caller's to wait for.
func (tm *Term) Search(q string) {
	tm.T.Helper()
	tm.Keys("C-t")
	tm.WaitScreen("the thread picker offers search", Has("/ search"))
	tm.Keys("/")
	tm.Tmux("send-keys", "-t", "t", "-l", q)
	tm.WaitScreen("the search line", Has("Search: "+q))
	tm.Keys("Enter")
}

// WaitScreen polls the screen until cond holds, failing with the screen.
func (tm *Term) WaitScreen(what string, cond func(string) bool) string {
	tm.T.Helper()
	within := tm.Within
	if within == 0 {
		within = 15 * time.Second
	}
	var last lastScreen
	testkit.Eventually(tm.T, within, func() bool {
		last.s = tm.Screen()
		return cond(last.s)
	}, "waiting for %s: not on the screen; the screen:\n%s", what, &last)
	return last.s
}

// lastScreen prints the screen seen last, when a wait fails.
type lastScreen struct{ s string }

func (l *lastScreen) String() string { return l.s }

// Has matches a screen holding every sub.
func Has(subs ...string) func(string) bool {
	return func(s string) bool {
		for _, sub := range subs {
			if !strings.Contains(s, sub) {
				return false
			}
		}
		return true
	}
}

// Flat is a screen's text as one line: its lines joined with a space and
// every run of spaces made one, so a phrase the terminal word-wrapped still
// matches (a resolution line wraps when its names are long).
func Flat(screen string) string { return strings.Join(strings.Fields(screen), " ") }

// HasFlat matches a screen holding every sub, wherever it wrapped.
func HasFlat(subs ...string) func(string) bool {
	return func(s string) bool { return Has(subs...)(Flat(s)) }
}
