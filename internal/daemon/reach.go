package daemon

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// certSource serves a person's own certificate (tls_cert, tls_key), read
// again when its file changes, so a renewed certificate needs no restart.
// Its mutex guards only the fields below it.
type certSource struct {
	certFile, keyFile string

	mu      sync.Mutex
	cur     *tls.Certificate
	mod     time.Time // the cert file's time when cur was read
	checked time.Time
}

// certCheckEvery bounds how often a handshake looks at the files.
const certCheckEvery = time.Minute

func loadCert(certFile, keyFile string) (*certSource, error) {
	c := &certSource{certFile: certFile, keyFile: keyFile}
	if err := c.reload(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *certSource) reload() error {
	st, err := os.Stat(c.certFile)
	if err != nil {
		return fmt.Errorf("tls_cert: %w", err)
	}
	pair, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return fmt.Errorf("tls_cert %s and tls_key %s: %w", c.certFile, c.keyFile, err)
	}
	if pair.Leaf == nil {
		if pair.Leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return fmt.Errorf("tls_cert %s: %w", c.certFile, err)
		}
	}
	c.mu.Lock()
	c.cur, c.mod, c.checked = &pair, st.ModTime(), time.Now()
	c.mu.Unlock()
	return nil
}

func (c *certSource) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	cur, due := c.cur, time.Since(c.checked) > certCheckEvery
	if due {
		c.checked = time.Now()
	}
	mod := c.mod
	c.mu.Unlock()
	if due {
		if st, err := os.Stat(c.certFile); err == nil && !st.ModTime().Equal(mod) {
			_ = c.reload() // a half-written renewal keeps the certificate that works
			c.mu.Lock()
			cur = c.cur
			c.mu.Unlock()
		}
	}
	return cur, nil
}

func (c *certSource) leaf() *x509.Certificate {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur.Leaf
}

// tlsConfig serves HTTP/1.1 (the chat socket's upgrade) over TLS 1.2 or later.
func (c *certSource) tlsConfig() *tls.Config {
	return &tls.Config{GetCertificate: c.get, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
}

// publicBase is the address other devices reach this parley at: public_url,
// else with a certificate its first DNS name (the port as listened), else the
// tailnet's https:// address once parley serves there, else "" (pairing links
// then name the address their request came to).
func (d *Daemon) publicBase() string {
	if d.cfg.PublicURL != "" {
		return strings.TrimRight(d.cfg.PublicURL, "/")
	}
	if d.cert == nil {
		if d.tailnet != nil {
			return d.tailnet.URL()
		}
		return ""
	}
	for _, name := range d.cert.leaf().DNSNames {
		if name != "localhost" && !strings.HasPrefix(name, "*.") {
			port := ""
			if tcp, ok := d.ln.Addr().(*net.TCPAddr); ok {
				port = strconv.Itoa(tcp.Port)
			}
			return "https://" + net.JoinHostPort(name, port)
		}
	}
	return ""
}

// LocalURL is this daemon's URL on this machine (what `<data>/addr` holds).
func (d *Daemon) LocalURL() string {
	scheme := "http"
	if d.cert != nil {
		scheme = "https"
	}
	return scheme + "://" + d.LinkAddr()
}

// CertPEM is the served certificate (PEM), for local clients to pin; nil
// without TLS.
func (d *Daemon) CertPEM() []byte {
	if d.cert == nil {
		return nil
	}
	b, err := os.ReadFile(d.cfg.TLSCert)
	if err != nil {
		return nil
	}
	return b
}
