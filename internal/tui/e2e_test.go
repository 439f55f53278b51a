package tui_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/daemon"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/scriptd"
)

// startDaemon runs a real daemon (SQLite, sockets) whose one agent ("echo") is
// the scripted driver, for the client's own behaviour (layout, keys,
// reconnects). TestChatWithClaudeCode runs the same binary against the real
// Claude Code; the chat binary only needs a URL and a token.
func startDaemon(t *testing.T) (*daemon.Daemon, string) {
	t.Helper()
	d, _, work := startRestartable(t)
	return d(), work
}

// startRestartable is startDaemon whose daemon can be stopped and started again
// on the same address and data: current returns the one running, restart
// stops it and, when again is true, starts the next.
func startRestartable(t *testing.T) (current func() *daemon.Daemon, restart func(again bool), work string) {
	t.Helper()
	r := scriptd.Start(t, nil)
	return r.D, func(again bool) {
		r.Down()
		if again {
			r.Up()
		}
	}, r.Work
}

// The real parley binary is built once for the package and removed after.
func TestMain(m *testing.M) { testkit.RunAndRemoveBinary(m) }

// term is a real terminal: a tmux server of the test's own.
type term struct {
	t      *testing.T
	sock   string
	within time.Duration // how long waitScreen waits (default 15s)
	status string        // file the program's exit status is written to
}

var sockSeq int

func startTerm(t *testing.T, env []string, argv ...string) *term {
	t.Helper()
	testkit.NeedsTmux(t)
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is required for the terminal tests: ", err)
	}
	sockSeq++
	tm := &term{t: t, sock: fmt.Sprintf("ptui-%d-%d", os.Getpid(), sockSeq)}
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
	tm.tmux(args...)
	return tm
}

func (tm *term) tmux(args ...string) string {
	tm.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", tm.sock}, args...)...).CombinedOutput()
	if err != nil {
		tm.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// exitStatus is the program's exit status, once it has exited.
func (tm *term) exitStatus() (string, bool) {
	b, err := os.ReadFile(tm.status)
	if err != nil || !bytes.HasSuffix(b, []byte("\n")) {
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

func (tm *term) screen() string { return tm.tmux("capture-pane", "-p", "-t", "t") }

// typeLine types text literally, then Enter.
func (tm *term) typeLine(text string) {
	tm.t.Helper()
	tm.tmux("send-keys", "-t", "t", "-l", text)
	tm.tmux("send-keys", "-t", "t", "Enter")
}

func (tm *term) keys(keys ...string) {
	tm.t.Helper()
	tm.tmux(append([]string{"send-keys", "-t", "t"}, keys...)...)
}

// waitScreen polls the screen until cond holds, failing with the screen.
func (tm *term) waitScreen(what string, cond func(string) bool) string {
	tm.t.Helper()
	within := tm.within
	if within == 0 {
		within = 15 * time.Second
	}
	var last lastScreen
	testkit.Eventually(tm.t, within, func() bool {
		last.s = tm.screen()
		return cond(last.s)
	}, "waiting for %s: not on the screen; the screen:\n%s", what, &last)
	return last.s
}

// lastScreen prints the screen seen last, when a wait fails.
type lastScreen struct{ s string }

func (l *lastScreen) String() string { return l.s }

// has matches a screen holding every sub.
func has(subs ...string) func(string) bool {
	return func(s string) bool {
		for _, sub := range subs {
			if !strings.Contains(s, sub) {
				return false
			}
		}
		return true
	}
}

var chunkRe = regexp.MustCompile(`c\d{2,} `)

var statusRe = regexp.MustCompile(`parley │ echo │ .* │ (idle|● working|stopping…) │ online`)

// TestChatInTmux runs `parley chat` in a real terminal against a real daemon.
func TestChatInTmux(t *testing.T) {
	testkit.NeedsTmux(t)
	bin := testkit.ParleyBinary(t)
	d, _ := startDaemon(t)
	server := "http://" + d.Addr()
	const chatID = "e2e-term"
	tm := startTerm(t, []string{"NO_COLOR=1"}, bin, "chat", "--server", server, "--token", d.Token(), "--chat", chatID)
	tm.waitScreen("the status line", has("online"))
	t.Cleanup(func() { t.Logf("the screen at the end:\n%s", tm.screen()) })

	step(t, "answer", func(t *testing.T) {
		tm.t = t
		tm.typeLine("say hello from the agent")
		s := tm.waitScreen("the answer", has("hello from the agent"))
		tm.waitScreen("the receipt", has("✓ submitted"))
		if !statusRe.MatchString(s) {
			t.Errorf("status line: got screen\n%s\nwant a line matching %s", s, statusRe)
		}
	})
	step(t, "multi-line input", func(t *testing.T) {
		tm.t = t
		tm.tmux("send-keys", "-t", "t", "-l", "say line one")
		tm.keys("M-Enter")
		tm.tmux("send-keys", "-t", "t", "-l", "say line two")
		tm.keys("C-j")
		tm.typeLine("say line three")
		tm.waitScreen("one message of three lines, answered", has("say line one\nsay line two\nsay line three\nagent\n  line oneline twoline three"))
	})
	step(t, "permission by key", func(t *testing.T) {
		tm.t = t
		tm.typeLine("permission Bash")
		tm.waitScreen("the permission card", has("Permission: Run Bash"))
		tm.keys("1")
		s := tm.waitScreen("the tool's answer", has("permission: allow"))
		if strings.Contains(s, "Permission: Run Bash") {
			t.Errorf("the card is still shown after it was answered:\n%s", s)
		}
	})
	step(t, "question by free text", func(t *testing.T) {
		tm.t = t
		tm.typeLine("question Which color?|red,blue")
		tm.waitScreen("the question card", has("Or type your own answer"))
		tm.typeLine("green please")
		tm.waitScreen("the answer", has("answer: Which color?=green please"))
	})
	step(t, "esc stops a slow turn", func(t *testing.T) {
		tm.t = t
		tm.typeLine("stream 100000 10ms")
		tm.waitScreen("streaming", func(s string) bool { return chunkRe.MatchString(s) && strings.Contains(s, "● working") })
		tm.keys("Escape")
		s := tm.waitScreen("the turn cancelled", func(s string) bool {
			return strings.Contains(s, "turn ended: cancelled") && strings.Contains(s, "│ idle │")
		})
		if strings.Contains(s, "c100000") {
			t.Errorf("the turn ran to its end instead of stopping:\n%s", s)
		}
	})
	step(t, "card answered elsewhere disappears", func(t *testing.T) {
		tm.t = t
		tm.typeLine("permission Write")
		tm.waitScreen("the permission card", has("Permission: Run Write"))
		// A second client, the dashboard's channel on a route of its own, opens
		// the same thread and answers the card.
		api := client.API{Server: server, Token: d.Token()}
		ths, err := api.Threads(context.Background())
		if err != nil || len(ths) != 1 {
			t.Fatalf("threads: got %v, %v; want one", ths, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		c, _, err := client.Dial(ctx, server, d.Token(), client.Options{Chat: "dash", Channel: "web", Since: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		th := ths[0]
		if err := c.Send(ctx, map[string]string{"type": "open_thread", "thread_id": string(th.ID)}); err != nil {
			t.Fatal(err)
		}
		var rid string
		for rid == "" {
			ev, err := c.Next(ctx)
			if err != nil {
				t.Fatalf("second client: %v", err)
			}
			if ev.Type == chat.TypePermissionRequest {
				var p chat.PermissionRequest
				_ = json.Unmarshal(ev.Raw, &p)
				if p.Tool.Name == "Write" {
					rid = p.RequestID
				}
			}
		}
		if err := c.Send(ctx, map[string]string{"type": "permission_response", "request_id": rid, "option_id": "allow"}); err != nil {
			t.Fatal(err)
		}
		s := tm.waitScreen("the card gone", func(s string) bool {
			return !strings.Contains(s, "Permission: Run Write") && strings.Contains(s, "Allow (by web)")
		})
		if !strings.Contains(s, "Enter send") {
			t.Errorf("the input is not back after the card went:\n%s", s)
		}
	})
	step(t, "new thread and switch back", func(t *testing.T) {
		tm.t = t
		tm.keys("C-n")
		tm.waitScreen("the new-thread note", has("your next message starts a new thread"))
		tm.typeLine("say in the new thread")
		tm.waitScreen("the answer in the new thread", func(s string) bool {
			return strings.Contains(s, "  in the new thread") && !strings.Contains(s, "hello from the agent")
		})
		tm.keys("C-t")
		tm.waitScreen("the thread picker", func(s string) bool {
			return strings.Contains(s, "Switch thread") && strings.Contains(s, "(this one)") && strings.Contains(s, "2. echo")
		})
		tm.keys("2")
		tm.waitScreen("the first thread again", func(s string) bool {
			return strings.Contains(s, "Allow (by web)") && !strings.Contains(s, "in the new thread")
		})
	})
	step(t, "search in the thread picker", func(t *testing.T) {
		tm.t = t
		tm.keys("C-t")
		tm.waitScreen("the picker offers search", has("/ search"))
		tm.keys("/")
		tm.tmux("send-keys", "-t", "t", "-l", "new thread")
		tm.waitScreen("the search line", has("Search: new thread"))
		tm.keys("Enter")
		tm.waitScreen("the thread found", has("1 threads found for \"new thread\"", "1. say in the new thread"))
		tm.keys("1")
		tm.waitScreen("the found thread", func(s string) bool {
			return strings.Contains(s, "  in the new thread") && !strings.Contains(s, "Allow (by web)")
		})
	})
	step(t, "resize", func(t *testing.T) {
		tm.t = t
		for _, size := range [][2]int{{60, 18}, {80, 24}} {
			tm.tmux("resize-window", "-t", "t", "-x", strconv.Itoa(size[0]), "-y", strconv.Itoa(size[1]))
			// The status line sits five rows from the bottom: above the three
			// input rows and the help row.
			tm.waitScreen(fmt.Sprintf("the layout at %dx%d", size[0], size[1]), func(s string) bool {
				lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
				return len(lines) == size[1] && strings.HasPrefix(lines[size[1]-5], " parley │") &&
					strings.HasPrefix(lines[size[1]-1], "Enter send")
			})
		}
	})
	step(t, "ctrl-c twice quits", func(t *testing.T) {
		tm.t = t
		tm.keys("C-c")
		tm.waitScreen("the warning", has("press Ctrl-C again to quit"))
		if st, done := tm.exitStatus(); done {
			t.Fatalf("parley chat exited (status %s) after one Ctrl-C, want it running", st)
		}
		tm.keys("C-c")
		testkit.Eventually(t, 10*time.Second, func() bool { _, done := tm.exitStatus(); return done },
			"parley chat still runs after the second Ctrl-C")
		if st, _ := tm.exitStatus(); st != "0" {
			t.Errorf("exit status: got %q, want 0", st)
		}
	})
}

// TestChatReconnects stops the daemon under a running `parley chat`: the
// terminal says it is offline, keeps what is typed meanwhile, and once the
// daemon is back catches up with since, sends it, and shows nothing twice.
func TestChatReconnects(t *testing.T) {
	testkit.NeedsTmux(t)
	bin := testkit.ParleyBinary(t)
	current, restart, _ := startRestartable(t)
	d := current()
	server, token := "http://"+d.Addr(), d.Token()
	tm := startTerm(t, []string{"NO_COLOR=1"}, bin, "chat", "--server", server, "--token", token, "--chat", "e2e-reconnect")
	t.Cleanup(func() { t.Logf("the screen at the end:\n%s", tm.screen()) })
	tm.waitScreen("online", has("│ online"))
	tm.typeLine("say before the restart")
	tm.waitScreen("the answer", has("  before the restart"))

	restart(false)
	tm.waitScreen("the offline indicator", has("OFFLINE"))
	tm.typeLine("say typed while offline")
	tm.waitScreen("the message kept", has("waiting for connection"))

	restart(true)
	s := tm.waitScreen("the answer after reconnecting", func(s string) bool {
		return strings.Contains(s, "│ online") && strings.Contains(s, "  typed while offline")
	})
	for _, text := range []string{"say before the restart", "  before the restart", "say typed while offline", "  typed while offline"} {
		if n := strings.Count(s, text); n != 1 {
			t.Errorf("%q is on the screen %d times, want once:\n%s", text, n, s)
		}
	}
}

// step runs one step of a sequence whose steps build on each other: after a
// failed step the rest would only wait out their deadlines, so the test ends.
func step(t *testing.T, name string, f func(t *testing.T)) {
	t.Helper()
	if !t.Run(name, f) {
		t.FailNow()
	}
}
