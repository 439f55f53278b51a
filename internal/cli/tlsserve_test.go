package cli_test

import (
	"path/filepath"
	"regexp"
	"testing"

	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/selfsigned"
)

// tlsLoginLink is the login link `parley serve` and `parley pair` print over
// TLS; its group is the address.
var tlsLoginLink = regexp.MustCompile(`https://(127\.0\.0\.1:\d+)/login\?code=[0-9a-f]+`)

// tlsServe is the real binary serving over its own certificate.
type tlsServe struct {
	bin  string
	data string          // its --data
	cert selfsigned.Cert // its --tls-cert and --tls-key, for 127.0.0.1
	addr string          // the address in the login link it printed
}

// serveTLS runs `parley serve` on a free port with a self-signed certificate
// and waits for the login link it prints; it is stopped at the test's end.
func serveTLS(t *testing.T) tlsServe {
	t.Helper()
	s := tlsServe{bin: testkit.ParleyBinary(t)}
	dir := t.TempDir()
	s.data = filepath.Join(dir, "data")
	s.cert = selfsigned.Make(t, dir, "127.0.0.1")
	m := serveProc(t, s.bin, dir, dir, s.data, tlsLoginLink, "--tls-cert", s.cert.CertFile, "--tls-key", s.cert.KeyFile)
	s.addr = m[1]
	return s
}
