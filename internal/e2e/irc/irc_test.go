// Package irc_test runs the IRC plugin end to end: a real ngircd on loopback, a
// real daemon supervising `parley plugin irc`, the real Claude Code (stream)
// behind the scripted Messages API, and people on IRC played by test clients.
package irc_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/channel/plugin"
	"github.com/parleyhq/parley/internal/channel/plugin/irc"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/cli"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/daemon"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/stream"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

// TestMain lets the test binary be `parley plugin irc` when the host starts it.
func TestMain(m *testing.M) {
	if os.Getenv("PARLEY_TEST_MAIN") == "1" {
		os.Exit(cli.Main(cli.Build{Version: "test"}, os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

const (
	wait      = 60 * time.Second
	lineLimit = 100
	channel   = "#agents"
)

var longAnswer = strings.TrimSpace(strings.Repeat("The scripted model says a long thing, word after word. ", 8))

func scenario() claudeapi.Scenario {
	return claudeapi.Scenario{Rules: []claudeapi.Rule{
		{Match: claudeapi.Match{Exact: "hello"}, Reply: claudeapi.Text(longAnswer, 6, 5*time.Millisecond)},
		{Match: claudeapi.Match{Exact: "make the file"}, Reply: claudeapi.Bash("touch made-by-bash", "Make a file")},
		{Match: claudeapi.Match{Exact: "make another"}, Reply: claudeapi.Bash("touch made-again", "Make another file")},
		{Match: claudeapi.Match{ToolResult: "Bash"}, Reply: claudeapi.Text("The command ran.", 1, 0)},
		{Match: claudeapi.Match{Exact: "count slowly"}, Reply: claudeapi.Text(counting(), 31, 60*time.Millisecond)},
		{Match: claudeapi.Match{Exact: "say control characters"}, Reply: claudeapi.Text(controlAnswer, 1, 0)},
		{Match: claudeapi.Match{Exact: "slowly"}, Reply: claudeapi.Text(strings.Repeat("tick\n", 400), 400, 50*time.Millisecond)},
	}}
}

// controlAnswer is an agent's answer holding what IRC reads as a command: a
// line that is a CTCP DCC offer, a CR inside a line, a NUL.
const controlAnswer = "\x01DCC SEND evil 2130706433 6667 1\x01\nbefore-cr\rafter-cr\nbefore-nul\x00after-nul \x01ACTION x\x01"

// counting is "n01\nn02\n…n30\nTHE-END": one IRC line per number.
func counting() string {
	var b strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&b, "n%02d\n", i)
	}
	b.WriteString("THE-END")
	return b.String()
}

// startNgircd runs Debian's ngircd on a free loopback port with its own config.
func startNgircd(t *testing.T, dir string) string {
	t.Helper()
	bin := "/usr/sbin/ngircd"
	if p, err := exec.LookPath("ngircd"); err == nil {
		bin = p
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("ngircd is not installed (scripts/test.sh installs it: apt-get install ngircd): %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	conf := filepath.Join(dir, "ngircd.conf")
	motd := filepath.Join(dir, "motd")
	if err := os.WriteFile(motd, []byte("parley test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`[Global]
Name = irc.parley.test
Info = parley test server
AdminInfo1 = parley tests
AdminInfo2 = loopback
AdminEMail = nobody@parley.test
Listen = 127.0.0.1
Ports = %d
MotdFile = %s
[Limits]
MaxPenaltyTime = 0
MaxConnectionsIP = 0
MaxNickLength = 30
PingTimeout = 300
[Options]
PAM = no
Ident = no
DNS = no
`, port, motd)
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--nodaemon", "--config", conf)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdout, cmd.Stderr = logWriter{t, "ngircd"}, logWriter{t, "ngircd"}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		<-done
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	testkit.Eventually(t, 10*time.Second, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, "ngircd did not listen on %s", addr)
	return addr
}

// person is someone on IRC: a test client that keeps every PRIVMSG to the
// channel or to them.
type person struct {
	t    *testing.T
	c    *irc.Conn
	mu   sync.Mutex
	seen []irc.Message
}

func join(t *testing.T, addr, nick string) *person {
	t.Helper()
	return joinAs(t, addr, irc.Identity{Nick: nick, Realname: nick})
}

// joinAs joins as id, with exactly id's nick (waiting for it to be free).
func joinAs(t *testing.T, addr string, id irc.Identity) *person {
	t.Helper()
	var c *irc.Conn
	testkit.Eventually(t, wait, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var err error
		c, err = irc.DialAs(ctx, addr, id)
		if err != nil {
			t.Logf("dial as %s: %v", id.Nick, err)
			return false
		}
		if c.Nick() != id.Nick { // the nick is still held: its owner's QUIT is not through yet
			c.Close()
			return false
		}
		return true
	}, "could not take the nick %s", id.Nick)
	t.Cleanup(func() { c.Close() })
	p := &person{t: t, c: c}
	go func() {
		for m := range c.Messages() {
			p.mu.Lock()
			p.seen = append(p.seen, m)
			p.mu.Unlock()
		}
	}()
	if err := c.Send("JOIN", channel); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *person) say(text string) {
	p.t.Helper()
	if err := p.c.Privmsg(channel, text); err != nil {
		p.t.Fatal(err)
	}
}

// sees says whether nick is in the channel as far as p has been told: a JOIN,
// or a NAMES reply that lists it.
func (p *person) sees(nick string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range p.seen {
		switch {
		case m.Command == "JOIN" && m.Nick() == nick:
			return true
		case m.Command == "353" && len(m.Params) > 0:
			for _, n := range strings.Fields(m.Params[len(m.Params)-1]) {
				if strings.TrimLeft(n, "~&@%+") == nick {
					return true
				}
			}
		}
	}
	return false
}

// mark is how many messages were seen so far.
func (p *person) mark() int { p.mu.Lock(); defer p.mu.Unlock(); return len(p.seen) }

// linesFrom returns the texts parley said to the channel after mark.
func (p *person) linesFrom(mark int) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, m := range p.seen[min(mark, len(p.seen)):] {
		if m.Command == "PRIVMSG" && m.Nick() == "parley" && len(m.Params) == 2 && m.Params[0] == channel {
			out = append(out, m.Params[1])
		}
	}
	return out
}

// waitLine waits for a line from parley after mark that holds want, and
// returns the mark after it.
func (p *person) waitLine(mark int, want string) int {
	p.t.Helper()
	var at int
	testkit.Eventually(p.t, wait, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		for i := mark; i < len(p.seen); i++ {
			m := p.seen[i]
			if m.Command == "PRIVMSG" && m.Nick() == "parley" && len(m.Params) == 2 && strings.Contains(m.Params[1], want) {
				at = i + 1
				return true
			}
		}
		return false
	}, "parley never said %q on IRC; it said %q", want, p.linesFrom(mark))
	return at
}

type rig struct {
	t    *testing.T
	d    *daemon.Daemon
	api  *claudeapi.Server
	work string
}

func newRig(t *testing.T) (*rig, string) {
	t.Helper()
	testkit.NeedsRealAgent(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home, work := filepath.Join(root, "home"), filepath.Join(root, "work")
	for _, d := range []string{home, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	addr := startNgircd(t, root)
	api := claudeapi.Start(t, scenario())
	env := map[string]string{}
	for _, kv := range claudeapi.Env(t, api, home, work) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default(filepath.Join(root, "data"), work)
	cfg.Addr = "127.0.0.1:0"
	cfg.Agents = []config.Agent{{ID: "claude", Transport: config.TransportStream, Command: testkit.ClaudeBin(t), Env: env}}
	cfg.Plugins = []config.Plugin{{
		ID: "irc", Command: self, Args: []string{"plugin", "irc"},
		Env: map[string]string{"PARLEY_TEST_MAIN": "1"},
		// ngircd without ident marks the user name with "~"; DNS is off, so
		// the host is the address.
		AllowedUsers: []string{"alice!~alice@127.0.0.1"},
		Config: map[string]any{"server": addr, "nick": "parley", "channels": []string{channel},
			"line_limit": lineLimit, "lines_per_second": 100},
		Heartbeat: config.Duration{Duration: time.Second},
	}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	d, err := daemon.Start(context.Background(), cfg, daemon.Options{
		Drivers: map[string]driver.Driver{config.TransportStream: stream.New(nil)},
		Logger:  testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := d.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return &rig{t: t, d: d, api: api, work: work}, addr
}

func (r *rig) plugin() plugin.Status {
	for _, s := range r.d.Plugins().Statuses() {
		if s.ID == "irc" {
			return s
		}
	}
	r.t.Fatal("no irc plugin status")
	return plugin.Status{}
}

func (r *rig) thread() chat.ThreadID {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	id, err := r.d.Router().ThreadOf(ctx, chat.RouteKey{Channel: "irc", Chat: channel})
	if err != nil {
		r.t.Fatal(err)
	}
	return id
}

func TestIRCEndToEnd(t *testing.T) {
	r, addr := newRig(t)
	testkit.Eventually(t, wait, func() bool { return r.plugin().State == plugin.StateRunning }, "the plugin never ran: %+v", r.plugin())
	top := t
	alice := join(t, addr, "alice")
	mallory := join(t, addr, "mallory")
	// parley's plugin is in the channel (it joined before alice, so it is in
	// her NAMES list, or after her). Its chat gets a thread only when an
	// allowed user first writes.
	testkit.Eventually(t, wait, func() bool { return alice.sees("parley") }, "parley never joined %s", channel)
	if id := r.thread(); id != "" {
		t.Errorf("the channel has thread %s before anyone wrote, want none yet", id)
	}

	t.Run("an allowed user's message reaches the agent; the answer comes in lines within the limit", func(t *testing.T) {
		m := alice.mark()
		alice.say("hello")
		alice.waitLine(m, "word after word.")
		var got []string
		testkit.Eventually(t, wait, func() bool {
			got = alice.linesFrom(m)
			return strings.Join(got, " ") == longAnswer
		}, "lines %q do not make up the answer %q", alice.linesFrom(m), longAnswer)
		if len(got) < 2 {
			t.Errorf("got %d line(s), want the %d-byte answer in several", len(got), len(longAnswer))
		}
		for _, l := range got {
			if len(l) > lineLimit {
				t.Errorf("line of %d bytes over the limit %d: %q", len(l), lineLimit, l)
			}
		}
	})

	t.Run("a user not allowed is refused and never reaches the agent", func(t *testing.T) {
		before := len(r.api.ScenarioRequests())
		m := mallory.mark()
		mallory.say("hello")
		mallory.waitLine(m, "not allowed")
		if after := len(r.api.ScenarioRequests()); after != before {
			t.Errorf("model requests: got %d after the refusal, want %d", after, before)
		}
	})

	t.Run("someone else who takes an allowed nick is refused", func(t *testing.T) {
		// Alice leaves; someone connecting from elsewhere takes her nick.
		alice.c.Close()
		impostor := joinAs(t, addr, irc.Identity{Nick: "alice", User: "eve", Realname: "eve", LocalAddr: "127.0.0.2"})
		before := len(r.api.ScenarioRequests())
		m := impostor.mark()
		impostor.say("hello")
		impostor.waitLine(m, "not allowed")
		// In a private message too; and the refused chat leaves no thread behind.
		if err := impostor.c.Privmsg("parley", "hello"); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, wait, func() bool {
			impostor.mu.Lock()
			defer impostor.mu.Unlock()
			for _, m := range impostor.seen[m:] {
				if m.Command == "PRIVMSG" && m.Nick() == "parley" && m.Params[0] == "alice" && strings.Contains(m.Params[1], "not allowed") {
					return true
				}
			}
			return false
		}, "the private message was not refused")
		if after := len(r.api.ScenarioRequests()); after != before {
			t.Errorf("model requests: got %d after the impostor wrote, want %d", after, before)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if id, err := r.d.Router().ThreadOf(ctx, chat.RouteKey{Channel: "irc", Chat: "alice"}); err != nil || id != "" {
			t.Errorf("the refused private chat has thread %q (%v), want none", id, err)
		}
		// The real Alice comes back (from her own user@host) and is let in again.
		impostor.c.Close()
		alice = join(top, addr, "alice") // for the rest of the test, not this subtest
		m = alice.mark()
		alice.say("/status")
		alice.waitLine(m, "Thread ")
	})

	t.Run("a permission answered by replying 1", func(t *testing.T) {
		m := alice.mark()
		alice.say("make the file")
		m = alice.waitLine(m, "1. ")
		alice.say("1")
		alice.waitLine(m, "The command ran.")
		if _, err := os.Stat(filepath.Join(r.work, "made-by-bash")); err != nil {
			t.Errorf("the tool did not run: %v", err)
		}
	})

	t.Run("control characters in an answer: no CTCP goes out, no text is lost", func(t *testing.T) {
		m := alice.mark()
		alice.say("say control characters")
		alice.waitLine(m, "ACTION x")
		want := []string{"␁DCC SEND evil 2130706433 6667 1␁", "before-cr", "after-cr", "before-nul", "after-nul ␁ACTION x␁"}
		if got := alice.linesFrom(m); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("parley said %q, want %q", got, want)
		}
	})

	t.Run("unknown command", func(t *testing.T) {
		before := len(r.api.ScenarioRequests())
		m := alice.mark()
		alice.say("/frobnicate")
		alice.waitLine(m, "unknown command /frobnicate")
		if after := len(r.api.ScenarioRequests()); after != before {
			t.Errorf("model requests: got %d after an unknown command, want %d", after, before)
		}
	})

	t.Run("/stop during a slow answer", func(t *testing.T) {
		m := alice.mark()
		alice.say("slowly")
		alice.waitLine(m, "tick")
		start := time.Now()
		alice.say("/stop")
		alice.waitLine(m, "(stopped)")
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("stop took %v", took)
		}
		if n := len(alice.linesFrom(m)); n > 300 {
			t.Errorf("got %d lines, want the slow answer cut short", n)
		}
	})

	t.Run("/new and /switch", func(t *testing.T) {
		first := r.thread()
		m := alice.mark()
		alice.say("/new")
		m = alice.waitLine(m, "New thread")
		second := r.thread()
		if second == first || second == "" {
			t.Fatalf("after /new: thread %q, want a new one (was %q)", second, first)
		}
		alice.say("/threads")
		m = alice.waitLine(m, string(first))
		alice.say("/switch " + string(first))
		alice.waitLine(m, "Switched to thread "+string(first))
		if got := r.thread(); got != first {
			t.Errorf("after /switch: thread %q, want %q", got, first)
		}
	})

	t.Run("the plugin killed mid-answer is restarted and is sent what it missed", func(t *testing.T) {
		m := alice.mark()
		alice.say("count slowly")
		alice.waitLine(m, "n02")
		st := r.plugin()
		if err := syscall.Kill(st.PID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, wait, func() bool {
			now := r.plugin()
			return now.State == plugin.StateRunning && now.PID != st.PID
		}, "the plugin was not restarted: %+v", r.plugin())
		alice.waitLine(m, "THE-END")
		got := strings.Join(alice.linesFrom(m), "\n")
		for i := 1; i <= 30; i++ {
			if n := fmt.Sprintf("n%02d", i); !strings.Contains(got, n) {
				t.Errorf("line %s was lost across the restart; got:\n%s", n, got)
			}
		}
	})

	t.Run("the plugin killed mid-turn is restarted and the open card reaches it again", func(t *testing.T) {
		m := alice.mark()
		alice.say("make another")
		m = alice.waitLine(m, "1. ")
		st := r.plugin()
		if err := syscall.Kill(st.PID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, wait, func() bool {
			now := r.plugin()
			return now.State == plugin.StateRunning && now.PID != st.PID && now.Restarts > st.Restarts
		}, "the plugin was not restarted: %+v", r.plugin())
		m = alice.waitLine(m, "1. ") // the same card, asked again after the restart
		alice.say("1")
		// The restarted plugin is sent again what it may not have shown
		// (at least once), so an earlier "The command ran." can come back:
		// the follow-up that counts is the one after the answer.
		m = alice.waitLine(m, "Answered: ")
		alice.waitLine(m, "The command ran.")
		if _, err := os.Stat(filepath.Join(r.work, "made-again")); err != nil {
			t.Errorf("the tool did not run: %v", err)
		}
	})
}

type logWriter struct {
	t    *testing.T
	name string
}

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s: %s", w.name, strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(logWriter{t, "parley"}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}
