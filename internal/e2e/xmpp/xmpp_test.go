//go:build e2e

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
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/channel/plugin"
	"github.com/parleyhq/parley/internal/channel/plugin/xmpp"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
	"github.com/parleyhq/parley/internal/testkit/imrig"
)

// TestMain lets the test binary be `parley plugin xmpp` when the host starts it.
func TestMain(m *testing.M) { imrig.Main(m) }

const (
	wait     = imrig.Wait
	limit    = 120
	domain   = "localhost"
	password = "test-password-not-a-secret"
)

func rules() []claudeapi.Rule {
	return append(imrig.Rules(),
		claudeapi.Rule{Match: claudeapi.Match{Exact: "slowly"}, Reply: claudeapi.Text(strings.Repeat("tick ", 400), 400, 50*time.Millisecond)},
	)
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
	cmd.Stdout, cmd.Stderr = imrig.LogWriter{T: t, Name: "prosody"}, imrig.LogWriter{T: t, Name: "prosody"}
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
	t *testing.T
	c *xmpp.Client
	imrig.Inbox[xmpp.Message]
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
	p.Keep(c.Messages())
	return p
}

func (p *person) Say(text string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.c.Say(ctx, "parley@"+domain, text); err != nil {
		p.t.Fatal(err)
	}
}

func (p *person) Said(mark int) []string {
	var out []string
	for _, m := range p.Since(mark) {
		if m.From == "parley@"+domain {
			out = append(out, m.Body)
		}
	}
	return out
}

// waitFor waits for a message from parley after mark holding want, and returns
// the mark after it.
func (p *person) WaitSaid(mark int, want string) int {
	p.t.Helper()
	return p.WaitFor(p.t, mark, func(m xmpp.Message) bool {
		return m.From == "parley@"+domain && strings.Contains(m.Body, want)
	}, "parley never said %q on XMPP; it said %q", want, imrig.Later(func() any { return p.Said(mark) }))
}

func newRig(t *testing.T) (*imrig.Rig, string, string) {
	t.Helper()
	r := imrig.New(t)
	addr, ca := startProsody(t, r.Root, "parley", "alice", "mallory")
	r.Start(rules(), imrig.Plugin{
		ID:           "xmpp",
		AllowedUsers: []string{"alice@" + domain},
		Config: map[string]any{"server": addr, "jid": "parley@" + domain, "password": password,
			"ca_file": ca, "message_limit": limit},
	})
	return r, addr, ca
}

func TestXMPPEndToEnd(t *testing.T) {
	r, addr, ca := newRig(t)
	testkit.Eventually(t, wait, func() bool {
		s := r.Plugin()
		return s.State == plugin.StateRunning && !s.LastHeartbeat.IsZero()
	}, "the plugin never ran: %+v", r.Plugin())
	alice := login(t, addr, ca, "alice")
	mallory := login(t, addr, ca, "mallory")

	t.Run("an allowed user's message reaches the agent; the answer comes in messages within the limit", func(t *testing.T) { r.CheckLongAnswer(t, alice, limit) })

	t.Run("a user not allowed is refused and never reaches the agent", func(t *testing.T) { r.CheckRefused(t, mallory) })

	t.Run("a permission answered by replying 1", func(t *testing.T) { r.CheckPermissionByReply(t, alice) })

	t.Run("/stop during a slow answer", func(t *testing.T) {
		m := alice.Mark()
		alice.Say("slowly")
		alice.WaitSaid(m, "tick") // a message fills up after ~24 ticks
		start := time.Now()
		alice.Say("/stop")
		alice.WaitSaid(m, "(stopped)")
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("stop took %v", took)
		}
		// The whole answer is 400 ticks: what was shown before "(stopped)"
		// (the part flushed at the stop included) must be less.
		ticks := 0
		for _, body := range alice.Said(m) {
			ticks += strings.Count(body, "tick")
		}
		if ticks == 0 || ticks >= 400 {
			t.Errorf("got %d ticks, want the slow answer (400) cut short", ticks)
		}
	})

	t.Run("/new and /switch", func(t *testing.T) { r.CheckNewAndSwitch(t, alice, "alice@"+domain) })

	t.Run("the plugin killed mid-turn is restarted and the open card reaches it again", func(t *testing.T) { r.CheckCardAfterRestart(t, alice) })
}
