package cli_test

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/selfsigned"
)

// A person renews --tls-cert while parley runs: parley serves the new
// certificate without a restart and rewrites the pin local commands use
// (<data>/addr.pem), so `parley devices` keeps working after the renewal.
func TestRenewedCertificateKeepsLocalCommandsWorking(t *testing.T) {
	bin := testkit.ParleyBinary(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cert := selfsigned.Make(t, dir, "127.0.0.1")
	cmd := exec.Command(bin, "serve", "--data", data, "--addr", "127.0.0.1:0", "--tls-cert", cert.CertFile, "--tls-key", cert.KeyFile)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + dir, "PATH=", "XDG_CONFIG_HOME=" + t.TempDir()}
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	link := regexp.MustCompile(`https://(127\.0\.0\.1:\d+)/login\?code=[0-9a-f]+`)
	var addr string
	for addr == "" && sc.Scan() {
		if m := link.FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
		}
	}
	if addr == "" {
		t.Fatal("no https link printed")
	}
	go io.Copy(io.Discard, stdout)
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
