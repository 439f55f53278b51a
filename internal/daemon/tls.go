package daemon

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// certSource serves a person's own certificate (tls_cert, tls_key), read
// again when its file changes, so a renewed certificate needs no restart. Each
// certificate it serves is first written to pinFile (<data>/addr.pem), which
// local clients pin (client.Local): a renewal never locks the CLI out. One
// goroutine (watch) reloads; its mutex guards only cur and mod.
type certSource struct {
	certFile, keyFile, pinFile string

	mu  sync.Mutex
	cur *tls.Certificate
	mod time.Time // the cert file's time when cur was read
}

// certCheckEvery is how often the certificate file is looked at (a stat) for
// a renewal.
const certCheckEvery = 5 * time.Second

func loadCert(certFile, keyFile, pinFile string) (*certSource, error) {
	c := &certSource{certFile: certFile, keyFile: keyFile, pinFile: pinFile}
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
	// The pin first, then the certificate: a client reading the pin after
	// this finds the one it will be shown.
	if c.pinFile != "" {
		if err := writeAtomic(c.pinFile, chainPEM(pair.Certificate)); err != nil {
			return fmt.Errorf("tls_cert: the local clients' pin: %w", err)
		}
	}
	c.mu.Lock()
	c.cur, c.mod = &pair, st.ModTime()
	c.mu.Unlock()
	return nil
}

// watch reloads the certificate when its file changes, until stop is called;
// a renewal half-written (or unreadable) keeps the certificate that works.
func (c *certSource) watch(log *slog.Logger) (stop func()) {
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(certCheckEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			c.mu.Lock()
			mod := c.mod
			c.mu.Unlock()
			st, err := os.Stat(c.certFile)
			if err != nil || st.ModTime().Equal(mod) {
				continue
			}
			if err := c.reload(); err != nil {
				log.Warn("the renewed certificate could not be loaded; the current one stays", "err", err)
				continue
			}
			log.Info("certificate renewed", "file", c.certFile, "not_after", c.leaf().NotAfter)
		}
	}()
	return func() {
		close(done)
		<-exited
	}
}

func (c *certSource) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur, nil
}

// chainPEM is a served chain as PEM, leaf first.
func chainPEM(chain [][]byte) []byte {
	var b []byte
	for _, der := range chain {
		b = append(b, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	return b
}

// writeAtomic replaces a file (mode 0600) at once: a reader sees the old
// content or the new, never half.
func writeAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
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

// CertPEM is the served certificate chain (PEM), what local clients pin
// (the daemon keeps it in <data>/addr.pem); nil without TLS.
func (d *Daemon) CertPEM() []byte {
	if d.cert == nil {
		return nil
	}
	d.cert.mu.Lock()
	defer d.cert.mu.Unlock()
	return chainPEM(d.cert.cur.Certificate)
}
