package tui_test

import (
	"context"
	"encoding/json"
	"fmt"
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
	"github.com/parleyhq/parley/internal/testkit/tmuxterm"
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

var chunkRe = regexp.MustCompile(`c\d{2,} `)

var statusRe = regexp.MustCompile(`parley │ echo │ .* │ (idle|● working|stopping…) │ online`)

// TestChatInTmux runs `parley chat` in a real terminal against a real daemon.
func TestChatInTmux(t *testing.T) {
	testkit.NeedsTmux(t)
	bin := testkit.ParleyBinary(t)
	d, _ := startDaemon(t)
	server := "http://" + d.Addr()
	const chatID = "e2e-term"
	tm := tmuxterm.Start(t, []string{"NO_COLOR=1"}, bin, "chat", "--server", server, "--token", d.Token(), "--chat", chatID)
	tm.WaitScreen("the status line", tmuxterm.Has("online"))
	t.Cleanup(func() { t.Logf("the screen at the end:\n%s", tm.Screen()) })

	step(t, "answer", func(t *testing.T) {
		tm.T = t
		tm.TypeLine("say hello from the agent")
		s := tm.WaitScreen("the answer", tmuxterm.Has("hello from the agent"))
		tm.WaitScreen("the receipt", tmuxterm.Has("✓ submitted"))
		if !statusRe.MatchString(s) {
			t.Errorf("status line: got screen\n%s\nwant a line matching %s", s, statusRe)
		}
	})
	step(t, "multi-line input", func(t *testing.T) {
		tm.T = t
		tm.Tmux("send-keys", "-t", "t", "-l", "say line one")
		tm.Keys("M-Enter")
		tm.Tmux("send-keys", "-t", "t", "-l", "say line two")
		tm.Keys("C-j")
		tm.TypeLine("say line three")
		tm.WaitScreen("one message of three lines, answered", tmuxterm.Has("say line one\nsay line two\nsay line three\nagent\n  line oneline twoline three"))
	})
	step(t, "permission by key", func(t *testing.T) {
		tm.T = t
		tm.TypeLine("permission Bash")
		tm.WaitScreen("the permission card", tmuxterm.Has("Permission: Run Bash"))
		tm.Keys("1")
		// Waited on, not looked at once: a capture can hold half a frame.
		tm.WaitScreen("the tool's answer, with the card gone", func(s string) bool {
			return strings.Contains(s, "permission: allow") && !strings.Contains(s, "Permission: Run Bash")
		})
	})
	step(t, "question by free text", func(t *testing.T) {
		tm.T = t
		tm.TypeLine("question Which color?|red,blue")
		tm.WaitScreen("the question card", tmuxterm.Has("Or type your own answer"))
		tm.TypeLine("green please")
		tm.WaitScreen("the answer", tmuxterm.Has("answer: Which color?=green please"))
	})
	step(t, "esc stops a slow turn", func(t *testing.T) {
		tm.T = t
		tm.TypeLine("stream 100000 10ms")
		tm.WaitScreen("streaming", func(s string) bool { return chunkRe.MatchString(s) && strings.Contains(s, "● working") })
		tm.Keys("Escape")
		s := tm.WaitScreen("the turn cancelled", func(s string) bool {
			return strings.Contains(s, "· Stopped.") && strings.Contains(s, "│ idle │")
		})
		if strings.Contains(s, "c100000") {
			t.Errorf("the turn ran to its end instead of stopping:\n%s", s)
		}
	})
	step(t, "a draft that grows", func(t *testing.T) {
		// parley chat takes a draft that only grew as what it adds: the
		// screen shows the whole text, provisional, until the turn ends.
		tm.T = t
		for _, line := range []string{"draft The first words", "pause 1s", "draft The first words and more"} {
			tm.Tmux("send-keys", "-t", "t", "-l", line)
			tm.Keys("M-Enter")
		}
		tm.TypeLine("pause 10m")
		tm.WaitScreen("the grown draft", func(s string) bool {
			_, draft, ok := strings.Cut(s, "agent · drawing (provisional)")
			return ok && strings.Contains(draft, "The first words and more")
		})
		tm.Keys("Escape")
		tm.WaitScreen("the turn stopped, the draft gone", func(s string) bool {
			return strings.Contains(s, "· Stopped.") && strings.Contains(s, "│ idle │") && !strings.Contains(s, "provisional")
		})
	})
	step(t, "card answered elsewhere disappears", func(t *testing.T) {
		tm.T = t
		tm.TypeLine("permission Write")
		tm.WaitScreen("the permission card", tmuxterm.Has("Permission: Run Write"))
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
		s := tm.WaitScreen("the card gone", func(s string) bool {
			return !strings.Contains(s, "Permission: Run Write") && strings.Contains(s, "Allow (by web)")
		})
		if !strings.Contains(s, "Enter send") {
			t.Errorf("the input is not back after the card went:\n%s", s)
		}
	})
	step(t, "new thread and switch back", func(t *testing.T) {
		tm.T = t
		tm.Keys("C-n")
		tm.WaitScreen("the new-thread note", tmuxterm.Has("your next message starts a new thread"))
		tm.TypeLine("say in the new thread")
		tm.WaitScreen("the answer in the new thread", func(s string) bool {
			return strings.Contains(s, "  in the new thread") && !strings.Contains(s, "hello from the agent")
		})
		tm.Keys("C-t")
		tm.WaitScreen("the thread picker", func(s string) bool {
			return strings.Contains(s, "Switch thread") && strings.Contains(s, "(this one)") && strings.Contains(s, "2. echo")
		})
		tm.Keys("2")
		tm.WaitScreen("the first thread again", func(s string) bool {
			return strings.Contains(s, "Allow (by web)") && !strings.Contains(s, "in the new thread")
		})
	})
	step(t, "search in the thread picker", func(t *testing.T) {
		tm.T = t
		tm.Search("new thread")
		tm.WaitScreen("the thread found", tmuxterm.Has("1 threads found for \"new thread\"", "1. say in the new thread"))
		tm.Keys("1")
		tm.WaitScreen("the found thread", func(s string) bool {
			return strings.Contains(s, "  in the new thread") && !strings.Contains(s, "Allow (by web)")
		})
	})
	step(t, "resize", func(t *testing.T) {
		tm.T = t
		for _, size := range [][2]int{{60, 18}, {80, 24}} {
			tm.Tmux("resize-window", "-t", "t", "-x", strconv.Itoa(size[0]), "-y", strconv.Itoa(size[1]))
			// The status line sits five rows from the bottom: above the three
			// input rows and the help row.
			tm.WaitScreen(fmt.Sprintf("the layout at %dx%d", size[0], size[1]), func(s string) bool {
				lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
				return len(lines) == size[1] && strings.HasPrefix(lines[size[1]-5], " parley │") &&
					strings.HasPrefix(lines[size[1]-1], "Enter send")
			})
		}
	})
	step(t, "ctrl-c twice quits", func(t *testing.T) {
		tm.T = t
		tm.Keys("C-c")
		tm.WaitScreen("the warning", tmuxterm.Has("press Ctrl-C again to quit"))
		if st, done := tm.ExitStatus(); done {
			t.Fatalf("parley chat exited (status %s) after one Ctrl-C, want it running", st)
		}
		tm.Keys("C-c")
		testkit.Eventually(t, 10*time.Second, func() bool { _, done := tm.ExitStatus(); return done },
			"parley chat still runs after the second Ctrl-C")
		if st, _ := tm.ExitStatus(); st != "0" {
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
	tm := tmuxterm.Start(t, []string{"NO_COLOR=1"}, bin, "chat", "--server", server, "--token", token, "--chat", "e2e-reconnect")
	t.Cleanup(func() { t.Logf("the screen at the end:\n%s", tm.Screen()) })
	tm.WaitScreen("online", tmuxterm.Has("│ online"))
	tm.TypeLine("say before the restart")
	tm.WaitScreen("the answer", tmuxterm.Has("  before the restart"))

	restart(false)
	tm.WaitScreen("the offline indicator", tmuxterm.Has("OFFLINE"))
	tm.TypeLine("say typed while offline")
	tm.WaitScreen("the message kept", tmuxterm.Has("waiting for connection"))

	restart(true)
	// Each once: waited on, not looked at once, as a capture can hold half a
	// frame (an old row and its new place both); a duplicate that stays fails.
	tm.WaitScreen("the answer after reconnecting, each message once", func(s string) bool {
		if !strings.Contains(s, "│ online") {
			return false
		}
		for _, text := range []string{"say before the restart", "  before the restart", "say typed while offline", "  typed while offline"} {
			if strings.Count(s, text) != 1 {
				return false
			}
		}
		return true
	})
}

// step runs one step of a sequence whose steps build on each other: after a
// failed step the rest would only wait out their deadlines, so the test ends.
func step(t *testing.T, name string, f func(t *testing.T)) {
	t.Helper()
	if !t.Run(name, f) {
		t.FailNow()
	}
}
