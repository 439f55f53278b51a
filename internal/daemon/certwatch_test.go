package daemon

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/parleyhq/parley/internal/testkit/selfsigned"
)

// A renewal moved over --tls-cert and --tls-key while parley runs is served
// from the next look at the files, and written to the local clients' pin
// first; a renewal half done (the new certificate beside the old key) keeps
// the certificate that works until the key follows. In synctest's fake time:
// the looks, certCheckEvery apart, pass at once (cli's
// TestRenewedCertificateKeepsLocalCommandsWorking waits for one for real).
func TestARenewedCertificateIsServedFromTheNextLook(t *testing.T) {
	t.Parallel()
	// Made outside the bubble: its clock starts in 2000, before any
	// certificate made inside it would be valid.
	cert := selfsigned.Make(t, t.TempDir(), "127.0.0.1")
	renewed := selfsigned.Make(t, t.TempDir(), "127.0.0.1")
	pin := filepath.Join(t.TempDir(), "addr.pem")
	// A renewal's file is newer; both made within one tick of the file
	// system's coarse clock would look unchanged.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(renewed.CertFile, later, later); err != nil {
		t.Fatal(err)
	}
	synctest.Test(t, func(t *testing.T) {
		c, err := loadCert(cert.CertFile, cert.KeyFile, pin)
		if err != nil {
			t.Fatal(err)
		}
		stop := c.watch(slog.New(slog.DiscardHandler))
		defer stop()
		served := func() []byte { return c.leaf().Raw }
		pinned := func() []byte {
			b, err := os.ReadFile(pin)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		if !bytes.Equal(served(), cert.Cert.Raw) || !bytes.Equal(pinned(), chainPEM([][]byte{cert.Cert.Raw})) {
			t.Fatal("not serving and pinning the certificate it was started with")
		}

		if err := os.Rename(renewed.CertFile, cert.CertFile); err != nil {
			t.Fatal(err)
		}
		time.Sleep(certCheckEvery)
		synctest.Wait()
		if !bytes.Equal(served(), cert.Cert.Raw) || !bytes.Equal(pinned(), chainPEM([][]byte{cert.Cert.Raw})) {
			t.Fatal("a certificate without its key replaced the one that works")
		}

		if err := os.Rename(renewed.KeyFile, cert.KeyFile); err != nil {
			t.Fatal(err)
		}
		time.Sleep(certCheckEvery)
		synctest.Wait()
		if !bytes.Equal(served(), renewed.Cert.Raw) {
			t.Fatal("the renewed certificate is not served after the next look")
		}
		if !bytes.Equal(pinned(), chainPEM([][]byte{renewed.Cert.Raw})) {
			t.Fatal("the local clients' pin is not the renewed certificate")
		}
	})
}
