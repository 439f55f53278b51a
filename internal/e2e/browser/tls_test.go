//go:build e2e

package browser

import (
	"crypto/tls"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/parleyhq/parley/internal/testkit/selfsigned"
)

// parley serve --tls-cert/--tls-key serves the dashboard over real TLS: a Go
// client that trusts the certificate reaches the API, and Chromium, trusting
// exactly that key, signs in with the printed https link and gets a Secure
// cookie and a live dashboard.
func TestOwnCertificateInChromium(t *testing.T) {
	r := newRig(t)
	cert := selfsigned.Make(t, r.dir, "127.0.0.1")
	r.stop()
	r.args = []string{"--tls-cert", cert.CertFile, "--tls-key", cert.KeyFile}
	r.start()
	if !strings.HasPrefix(r.Printed, "https://127.0.0.1:") {
		t.Fatalf("printed link %s", r.Printed)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: cert.Pool()}}, Timeout: wait}
	req, _ := http.NewRequest("GET", r.Base+"/api/version", nil)
	req.Header.Set("Authorization", "Bearer "+r.Token)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("Go client over TLS: %v", err)
	}
	var v struct{ PID int }
	json.NewDecoder(resp.Body).Decode(&v)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.TLS == nil || v.PID == 0 {
		t.Fatalf("version over TLS: %d %+v", resp.StatusCode, v)
	}

	ctx, closeIt := startBrowserWith(t, 1280, 860, chromedp.Flag("ignore-certificate-errors-spki-list", cert.SPKI))
	t.Cleanup(closeIt)
	run(t, ctx, "open the printed https link", chromedp.Navigate(r.Printed))
	until(t, ctx, "the dashboard over TLS", `location.protocol === "https:" && !!document.querySelector(".desk, .phone")`)
	until(t, ctx, "a secure context with its service worker", `window.isSecureContext && navigator.serviceWorker.controller !== null`)
	c := sessionCookie(t, ctx, r.Base)
	if c == nil || !c.Secure || !c.HTTPOnly {
		t.Fatalf("session cookie over TLS: %+v", c)
	}
}
