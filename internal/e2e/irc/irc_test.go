//go:build e2e

// Package irc_test runs the IRC plugin end to end: a real ngircd on loopback, a
// real daemon supervising `parley plugin irc`, the real Claude Code (stream)
// behind the scripted Messages API, and people on IRC played by test clients.
package irc_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/channel/plugin"
	"github.com/parleyhq/parley/internal/channel/plugin/irc"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
	"github.com/parleyhq/parley/internal/testkit/imrig"
)

// TestMain lets the test binary be `parley plugin irc` when the host starts it.
func TestMain(m *testing.M) { imrig.Main(m) }

const (
	wait      = imrig.Wait
	lineLimit = 100
	channel   = "#agents"
)

func rules() []claudeapi.Rule {
	return append(imrig.Rules(),
		claudeapi.Rule{Match: claudeapi.Match{Exact: "count slowly"}, Reply: claudeapi.Text(counting(), 31, 60*time.Millisecond)},
		claudeapi.Rule{Match: claudeapi.Match{Exact: "say control characters"}, Reply: claudeapi.Text(controlAnswer, 1, 0)},
		claudeapi.Rule{Match: claudeapi.Match{Exact: "slowly"}, Reply: claudeapi.Text(strings.Repeat("tick\n", 400), 400, 50*time.Millisecond)},
	)
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
	cmd.Stdout, cmd.Stderr = imrig.LogWriter{T: t, Name: "ngircd"}, imrig.LogWriter{T: t, Name: "ngircd"}
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

// person is someone on IRC: a test client that keeps every message it gets.
type person struct {
	t *testing.T
	c *irc.Conn
	imrig.Inbox[irc.Message]
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
	p.Keep(c.Messages())
	if err := c.Send("JOIN", channel); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *person) Say(text string) {
	p.t.Helper()
	if err := p.c.Privmsg(channel, text); err != nil {
		p.t.Fatal(err)
	}
}

// sees says whether nick is in the channel as far as p has been told: a JOIN,
// or a NAMES reply that lists it.
func (p *person) sees(nick string) bool {
	for _, m := range p.Since(0) {
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

// Said returns the lines parley said to the channel after mark.
func (p *person) Said(mark int) []string {
	var out []string
	for _, m := range p.Since(mark) {
		if m.Command == "PRIVMSG" && m.Nick() == "parley" && len(m.Params) == 2 && m.Params[0] == channel {
			out = append(out, m.Params[1])
		}
	}
	return out
}

// waitLine waits for a line from parley after mark that holds want, and
// returns the mark after it.
func (p *person) WaitSaid(mark int, want string) int {
	p.t.Helper()
	return p.WaitFor(p.t, mark, func(m irc.Message) bool {
		return m.Command == "PRIVMSG" && m.Nick() == "parley" && len(m.Params) == 2 && strings.Contains(m.Params[1], want)
	}, "parley never said %q on IRC; it said %q", want, imrig.Later(func() any { return p.Said(mark) }))
}

func newRig(t *testing.T) (*imrig.Rig, string) {
	t.Helper()
	r := imrig.New(t)
	addr := startNgircd(t, r.Root)
	r.Start(rules(), imrig.Plugin{
		ID: "irc",
		// ngircd without ident marks the user name with "~"; DNS is off, so
		// the host is the address.
		AllowedUsers: []string{"alice!~alice@127.0.0.1"},
		Config: map[string]any{"server": addr, "nick": "parley", "channels": []string{channel},
			"line_limit": lineLimit, "lines_per_second": 100},
	})
	return r, addr
}

func TestIRCEndToEnd(t *testing.T) {
	r, addr := newRig(t)
	testkit.Eventually(t, wait, func() bool { return r.Plugin().State == plugin.StateRunning }, "the plugin never ran: %+v", r.Plugin())
	top := t
	alice := join(t, addr, "alice")
	mallory := join(t, addr, "mallory")
	// parley's plugin is in the channel (it joined before alice, so it is in
	// her NAMES list, or after her). Its chat gets a thread only when an
	// allowed user first writes.
	testkit.Eventually(t, wait, func() bool { return alice.sees("parley") }, "parley never joined %s", channel)
	if id := r.Thread(channel); id != "" {
		t.Errorf("the channel has thread %s before anyone wrote, want none yet", id)
	}

	t.Run("an allowed user's message reaches the agent; the answer comes in lines within the limit", func(t *testing.T) { r.CheckLongAnswer(t, alice, lineLimit) })

	t.Run("a user not allowed is refused and never reaches the agent", func(t *testing.T) { r.CheckRefused(t, mallory) })

	t.Run("someone else who takes an allowed nick is refused", func(t *testing.T) {
		// Alice leaves; someone connecting from elsewhere takes her nick.
		alice.c.Close()
		impostor := joinAs(t, addr, irc.Identity{Nick: "alice", User: "eve", Realname: "eve", LocalAddr: "127.0.0.2"})
		before := len(r.API.ScenarioRequests())
		m := impostor.Mark()
		impostor.Say("hello")
		impostor.WaitSaid(m, "not allowed")
		// In a private message too; and the refused chat leaves no thread behind.
		if err := impostor.c.Privmsg("parley", "hello"); err != nil {
			t.Fatal(err)
		}
		impostor.WaitFor(t, m, func(m irc.Message) bool {
			return m.Command == "PRIVMSG" && m.Nick() == "parley" && len(m.Params) == 2 && m.Params[0] == "alice" && strings.Contains(m.Params[1], "not allowed")
		}, "the private message was not refused")
		if after := len(r.API.ScenarioRequests()); after != before {
			t.Errorf("model requests: got %d after the impostor wrote, want %d", after, before)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if id, err := r.D.Router().ThreadOf(ctx, chat.RouteKey{Channel: "irc", Chat: "alice"}); err != nil || id != "" {
			t.Errorf("the refused private chat has thread %q (%v), want none", id, err)
		}
		// The real Alice comes back (from her own user@host) and is let in again.
		impostor.c.Close()
		alice = join(top, addr, "alice") // for the rest of the test, not this subtest
		m = alice.Mark()
		alice.Say("/status")
		alice.WaitSaid(m, "Thread ")
	})

	t.Run("a permission answered by replying 1", func(t *testing.T) { r.CheckPermissionByReply(t, alice) })

	t.Run("control characters in an answer: no CTCP goes out, no text is lost", func(t *testing.T) {
		m := alice.Mark()
		alice.Say("say control characters")
		alice.WaitSaid(m, "ACTION x")
		want := []string{"␁DCC SEND evil 2130706433 6667 1␁", "before-cr", "after-cr", "before-nul", "after-nul ␁ACTION x␁"}
		if got := alice.Said(m); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("parley said %q, want %q", got, want)
		}
	})

	t.Run("unknown command", func(t *testing.T) { r.CheckNotAsked(t, alice, "/frobnicate", "unknown command /frobnicate") })

	t.Run("/stop during a slow answer", func(t *testing.T) {
		m := alice.Mark()
		alice.Say("slowly")
		alice.WaitSaid(m, "tick")
		start := time.Now()
		alice.Say("/stop")
		alice.WaitSaid(m, "(stopped)")
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("stop took %v", took)
		}
		if n := len(alice.Said(m)); n > 300 {
			t.Errorf("got %d lines, want the slow answer cut short", n)
		}
	})

	t.Run("/new and /switch", func(t *testing.T) { r.CheckNewAndSwitch(t, alice, channel) })

	t.Run("the plugin killed mid-answer is restarted and is sent what it missed", func(t *testing.T) {
		m := alice.Mark()
		alice.Say("count slowly")
		alice.WaitSaid(m, "n02")
		r.KillPlugin()
		alice.WaitSaid(m, "THE-END")
		got := strings.Join(alice.Said(m), "\n")
		for i := 1; i <= 30; i++ {
			if n := fmt.Sprintf("n%02d", i); !strings.Contains(got, n) {
				t.Errorf("line %s was lost across the restart; got:\n%s", n, got)
			}
		}
	})

	t.Run("the plugin killed mid-turn is restarted and the open card reaches it again", func(t *testing.T) { r.CheckCardAfterRestart(t, alice) })
}
