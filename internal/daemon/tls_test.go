package daemon_test

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/testkit/selfsigned"
)

// With --tls-cert/--tls-key parley serves HTTPS with that certificate: a Go
// client that trusts it reaches the API and the chat socket (wss), pairing
// links name the certificate's host, and plain HTTP gets nowhere. Listening
// beyond loopback with TLS brings no clear-text warning; without, it does.
func TestOwnCertificateServesTLS(t *testing.T) {
	t.Parallel()
	cert := selfsigned.Make(t, t.TempDir(), "parley.test", "127.0.0.1")
	e := startDaemon(t, func(c *config.Config) {
		c.Addr = "0.0.0.0:0"
		c.TLSCert, c.TLSKey = cert.CertFile, cert.KeyFile
	})
	for _, w := range e.d.Warnings() {
		if strings.Contains(w, "without TLS") {
			t.Fatalf("warned of clear text with TLS on: %s", w)
		}
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: cert.Pool()}}, Timeout: 10 * time.Second}
	base := e.d.LocalURL()
	if !strings.HasPrefix(base, "https://127.0.0.1:") {
		t.Fatalf("local URL %s", base)
	}
	req, _ := http.NewRequest("POST", base+"/api/pair-codes", strings.NewReader(`{"name":"phone"}`))
	req.Header.Set("Authorization", "Bearer "+e.d.Token())
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	_, port, _ := strings.Cut(strings.TrimPrefix(base, "https://127.0.0.1"), ":")
	if resp.StatusCode != 200 || resp.TLS == nil || !strings.Contains(string(b), `"url":"https://parley.test:`+port+`/login?code=`) {
		t.Fatalf("pair code over TLS: %d %s", resp.StatusCode, b)
	}
	if link, _ := e.d.LoginURL(); !strings.HasPrefix(link, "https://parley.test:"+port+"/login?code=") {
		t.Fatalf("printed link %s", link)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := client.Dial(ctx, base, e.d.Token(), client.Options{Chat: "tls", Since: -1, HTTPClient: hc})
	if err != nil {
		t.Fatalf("wss: %v", err)
	}
	defer c.CloseNow()
	c.Send(ctx, map[string]any{"type": "message", "message_id": "m1", "text": "say over tls"})
	for {
		ev, err := c.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == chat.TypeAgentChunk {
			break
		}
	}
	if resp, err := http.Get("http://" + e.d.LinkAddr() + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Fatal("plain HTTP reached parley on its TLS port")
		}
	}
	// Without TLS, the same address starts only when the person said so
	// (insecure_http), and is still warned about.
	plain := startDaemon(t, func(c *config.Config) { c.Addr = "0.0.0.0:0"; c.InsecureHTTP = true })
	warned := false
	for _, w := range plain.d.Warnings() {
		warned = warned || strings.Contains(w, "without TLS")
	}
	if !warned {
		t.Fatalf("no clear-text warning for %s without TLS: %v", plain.d.Addr(), plain.d.Warnings())
	}
}
