package client

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/parleyhq/parley/internal/testkit/selfsigned"
)

// A local daemon serving HTTPS is reached through the certificate it wrote
// beside its address, pinned: another certificate on that address is refused.
func TestLocalPinsTheDaemonsCertificate(t *testing.T) {
	// Not parallel: client.Local replaces http.DefaultTransport.
	saved := http.DefaultTransport
	t.Cleanup(func() { http.DefaultTransport = saved })
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	other := selfsigned.Make(t, t.TempDir(), "127.0.0.1") // httptest's servers all share one certificate
	dir := t.TempDir()
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("addr", []byte(srv.URL+"\n"))
	write("token", []byte("0123456789abcdef0123\n"))
	write(AddrCertFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	server, _, err := Local(dir)
	if err != nil || server != srv.URL {
		t.Fatalf("Local: %q %v", server, err)
	}
	resp, err := http.Get(server + "/")
	if err != nil {
		t.Fatalf("the pinned daemon: %v", err)
	}
	resp.Body.Close()
	write(AddrCertFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: other.Cert.Raw}))
	if _, _, err := Local(dir); err != nil {
		t.Fatal(err)
	}
	http.DefaultTransport.(*pinnedHost).pinned.CloseIdleConnections()
	if resp, err := http.Get(server + "/"); err == nil {
		resp.Body.Close()
		t.Fatal("a certificate other than the pinned one was accepted")
	}
	http.DefaultTransport.(*pinnedHost).pinned.CloseIdleConnections()
	saved.(*http.Transport).CloseIdleConnections()
}
