package cli_test

import (
	"bytes"
	"crypto/tls"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/selfsigned"
)

// A person renews --tls-cert while parley runs: parley serves the new
// certificate without a restart and rewrites the pin local commands use
// (<data>/addr.pem), so `parley devices` keeps working after the renewal.
func TestRenewedCertificateKeepsLocalCommandsWorking(t *testing.T) {
	t.Parallel()
	srv := serveTLS(t)
	bin, data, cert, addr := srv.bin, srv.data, srv.cert, srv.addr
	devices := func() error {
		out, err := exec.Command(bin, "devices", "--data", data).CombinedOutput()
		if err != nil {
			t.Logf("parley devices: %s", out)
		}
		return err
	}
	if err := devices(); err != nil {
		t.Fatalf("parley devices before the renewal: %v", err)
	}

	// The renewal: a new key and certificate moved over the files, key first.
	renewed := selfsigned.Make(t, t.TempDir(), "127.0.0.1")
	if err := os.Rename(renewed.KeyFile, cert.KeyFile); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(renewed.CertFile, cert.CertFile); err != nil {
		t.Fatal(err)
	}
	served := func() bool {
		c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) // compared below, not verified
		if err != nil {
			return false
		}
		defer c.Close()
		return bytes.Equal(c.ConnectionState().PeerCertificates[0].Raw, renewed.Cert.Raw)
	}
	testkit.Eventually(t, 30*time.Second, served, "parley serves the renewed certificate")
	if err := devices(); err != nil {
		t.Fatalf("parley devices after the renewal: %v", err)
	}
}
