// Package xmpp_test runs the XMPP plugin end to end: a real prosody on loopback
// (StartTLS with a certificate made here), a real daemon supervising `parley
// plugin xmpp`, the real Claude Code (stream) behind the scripted Messages API,
// and people on XMPP played by test clients.
package xmpp_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"log/slog"
	"math/big"
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
	"github.com/parleyhq/parley/internal/channel/plugin/xmpp"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/cli"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/daemon"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/stream"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

// TestMain lets the test binary be `parley plugin xmpp` when the host starts it.
func TestMain(m *testing.M) {
	if os.Getenv("PARLEY_TEST_MAIN") == "1" {
		os.Exit(cli.Main(cli.Build{Version: "test"}, os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

const (
	wait     = 60 * time.Second
	limit    = 120
	domain   = "localhost"
	password = "test-password-not-a-secret"
)

var longAnswer = strings.TrimSpace(strings.Repeat("The scripted model says a long thing, word after word. ", 8))

func scenario() claudeapi.Scenario {
	return claudeapi.Scenario{Rules: []claudeapi.Rule{
		{Match: claudeapi.Match{Exact: "hello"}, Reply: claudeapi.Text(longAnswer, 6, 5*time.Millisecond)},
		{Match: claudeapi.Match{Exact: "make the file"}, Reply: claudeapi.Bash("touch made-by-bash", "Make a file")},
		{Match: claudeapi.Match{Exact: "make another"}, Reply: claudeapi.Bash("touch made-again", "Make another file")},
		{Match: claudeapi.Match{ToolResult: "Bash"}, Reply: claudeapi.Text("The command ran.", 1, 0)},
		{Match: claudeapi.Match{Exact: "slowly"}, Reply: claudeapi.Text(strings.Repeat("tick ", 400), 400, 50*time.Millisecond)},
	}}
}

// writeCert makes a self-signed certificate for localhost.
func writeCert(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: domain}, DNSNames: []string{domain},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// startProsody runs Debian's prosody on a free loopback port with its own
// config, data and accounts (internal_plain account files).
func startProsody(t *testing.T, dir string, users ...string) (addr, caFile string) {
	t.Helper()
	bin, err := exec.LookPath("prosody")
	if err != nil {
		t.Fatalf("prosody is not installed (scripts/test.sh installs it: apt-get install prosody lua-unbound): %v", err)
	}
	cert, key := writeCert(t, dir)
	data := filepath.Join(dir, "prosody-data")
	if err := os.MkdirAll(filepath.Join(data, domain, "accounts"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		acct := fmt.Sprintf("return {\n\t[\"password\"] = %q;\n};\n", password)
		if err := os.WriteFile(filepath.Join(data, domain, "accounts", u+".dat"), []byte(acct), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	conf := filepath.Join(dir, "prosody.cfg.lua")
	body := fmt.Sprintf(`run_as_root = true
daemonize = false
pidfile = %q
data_path = %q
certificates = %q
log = { { levels = { min = "info" }, to = "console" } }
interfaces = { "127.0.0.1" }
c2s_ports = { %d }
c2s_direct_tls_ports = { }
legacy_ssl_ports = { }
modules_enabled = { "roster"; "saslauth"; "tls"; "disco"; "ping"; "posix" }
modules_disabled = { "s2s" }
authentication = "internal_plain"
c2s_require_encryption = true
ssl = { key = %q; certificate = %q }
VirtualHost %q
`, filepath.Join(dir, "prosody.pid"), data, dir, port, key, cert, domain)
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", conf, "-F")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdout, cmd.Stderr = logWriter{t, "prosody"}, logWriter{t, "prosody"}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
	addr = fmt.Sprintf("127.0.0.1:%d", port)
	testkit.Eventually(t, 20*time.Second, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, "prosody did not listen on %s", addr)
	return addr, cert
}

// person is someone on XMPP: a test client keeping every message it gets.
type person struct {
	t    *testing.T
	c    *xmpp.Client
	mu   sync.Mutex
	seen []xmpp.Message
}

func login(t *testing.T, addr, ca, user string) *person {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := xmpp.Dial(ctx, xmpp.Config{Server: addr, JID: user + "@" + domain, Password: password, CAFile: ca})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	p := &person{t: t, c: c}
	go func() {
		for m := range c.Messages() {
			p.mu.Lock()
			p.seen = append(p.seen, m)
			p.mu.Unlock()
		}
	}()
	return p
}

func (p *person) say(text string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.c.Say(ctx, "parley@"+domain, text); err != nil {
		p.t.Fatal(err)
	}
}

func (p *person) mark() int { p.mu.Lock(); defer p.mu.Unlock(); return len(p.seen) }

func (p *person) from(mark int) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, m := range p.seen[min(mark, len(p.seen)):] {
		if m.From == "parley@"+domain {
			out = append(out, m.Body)
		}
	}
	return out
}

// waitFor waits for a message from parley after mark holding want, and returns
// the mark after it.
func (p *person) waitFor(mark int, want string) int {
	p.t.Helper()
	var at int
	testkit.Eventually(p.t, wait, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		for i := mark; i < len(p.seen); i++ {
			if p.seen[i].From == "parley@"+domain && strings.Contains(p.seen[i].Body, want) {
				at = i + 1
				return true
			}
		}
		return false
	}, "parley never said %q on XMPP; it said %q", want, p.from(mark))
	return at
}

type rig struct {
	t    *testing.T
	d    *daemon.Daemon
	api  *claudeapi.Server
	work string
}

func newRig(t *testing.T) (*rig, string, string) {
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
	addr, ca := startProsody(t, root, "parley", "alice", "mallory")
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
		ID: "xmpp", Command: self, Args: []string{"plugin", "xmpp"},
		Env:          map[string]string{"PARLEY_TEST_MAIN": "1"},
		AllowedUsers: []string{"alice@" + domain},
		Config: map[string]any{"server": addr, "jid": "parley@" + domain, "password": password,
			"ca_file": ca, "message_limit": limit},
		Heartbeat: config.Duration{Duration: time.Second},
	}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	d, err := daemon.Start(context.Background(), cfg, daemon.Options{
		Drivers: map[string]driver.Driver{config.TransportStream: stream.New(nil)},
		Logger:  slog.New(slog.NewTextHandler(logWriter{t, "parley"}, &slog.HandlerOptions{Level: slog.LevelInfo})),
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
	return &rig{t: t, d: d, api: api, work: work}, addr, ca
}

func (r *rig) plugin() plugin.Status {
	for _, s := range r.d.Plugins().Statuses() {
		if s.ID == "xmpp" {
			return s
		}
	}
	r.t.Fatal("no xmpp plugin status")
	return plugin.Status{}
}

func (r *rig) thread() chat.ThreadID {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	id, err := r.d.Router().ThreadOf(ctx, chat.RouteKey{Channel: "xmpp", Chat: "alice@" + domain})
	if err != nil {
		r.t.Fatal(err)
	}
	return id
}

func TestXMPPEndToEnd(t *testing.T) {
	r, addr, ca := newRig(t)
	testkit.Eventually(t, wait, func() bool {
		s := r.plugin()
		return s.State == plugin.StateRunning && !s.LastHeartbeat.IsZero()
	}, "the plugin never ran: %+v", r.plugin())
	alice := login(t, addr, ca, "alice")
	mallory := login(t, addr, ca, "mallory")

	t.Run("an allowed user's message reaches the agent; the answer comes in messages within the limit", func(t *testing.T) {
		m := alice.mark()
		alice.say("hello")
		var got []string
		testkit.Eventually(t, wait, func() bool {
			got = alice.from(m)
			return strings.Join(got, " ") == longAnswer
		}, "messages %q do not make up the answer %q", alice.from(m), longAnswer)
		if len(got) < 2 {
			t.Errorf("got %d message(s), want the %d-byte answer in several", len(got), len(longAnswer))
		}
		for _, l := range got {
			if len(l) > limit {
				t.Errorf("message of %d bytes over the limit %d: %q", len(l), limit, l)
			}
		}
	})

	t.Run("a user not allowed is refused and never reaches the agent", func(t *testing.T) {
		before := len(r.api.ScenarioRequests())
		m := mallory.mark()
		mallory.say("hello")
		mallory.waitFor(m, "not allowed")
		if after := len(r.api.ScenarioRequests()); after != before {
			t.Errorf("model requests: got %d after the refusal, want %d", after, before)
		}
	})

	t.Run("a permission answered by replying 1", func(t *testing.T) {
		m := alice.mark()
		alice.say("make the file")
		m = alice.waitFor(m, "1. ")
		alice.say("1")
		alice.waitFor(m, "The command ran.")
		if _, err := os.Stat(filepath.Join(r.work, "made-by-bash")); err != nil {
			t.Errorf("the tool did not run: %v", err)
		}
	})

	t.Run("/stop during a slow answer", func(t *testing.T) {
		m := alice.mark()
		alice.say("slowly")
		alice.waitFor(m, "tick") // a message fills up after ~24 ticks
		start := time.Now()
		alice.say("/stop")
		alice.waitFor(m, "(stopped)")
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("stop took %v", took)
		}
		// The whole answer is 400 ticks: what was shown before "(stopped)"
		// (the part flushed at the stop included) must be less.
		ticks := 0
		for _, body := range alice.from(m) {
			ticks += strings.Count(body, "tick")
		}
		if ticks == 0 || ticks >= 400 {
			t.Errorf("got %d ticks, want the slow answer (400) cut short", ticks)
		}
	})

	t.Run("/new and /switch", func(t *testing.T) {
		first := r.thread()
		m := alice.mark()
		alice.say("/new")
		m = alice.waitFor(m, "New thread")
		second := r.thread()
		if second == first || second == "" {
			t.Fatalf("after /new: thread %q, want a new one (was %q)", second, first)
		}
		alice.say("/switch " + string(first))
		alice.waitFor(m, "Switched to thread "+string(first))
		if got := r.thread(); got != first {
			t.Errorf("after /switch: thread %q, want %q", got, first)
		}
	})

	t.Run("the plugin killed mid-turn is restarted and the open card reaches it again", func(t *testing.T) {
		m := alice.mark()
		alice.say("make another")
		m = alice.waitFor(m, "1. ")
		st := r.plugin()
		if err := syscall.Kill(st.PID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, wait, func() bool {
			now := r.plugin()
			return now.State == plugin.StateRunning && now.PID != st.PID && now.Restarts > st.Restarts
		}, "the plugin was not restarted: %+v", r.plugin())
		m = alice.waitFor(m, "1. ")
		alice.say("1")
		// The restarted plugin is sent again what it may not have shown
		// (at least once), so an earlier "The command ran." can come back:
		// the follow-up that counts is the one after the answer.
		m = alice.waitFor(m, "Answered: ")
		alice.waitFor(m, "The command ran.")
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
