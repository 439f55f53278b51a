package client

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"sync"
)

// AddrCertFile in the data directory holds the certificate a local daemon
// serving HTTPS presents, written beside the address file.
const AddrCertFile = "addr.pem"

var pinOnce sync.Mutex

// pinLocal makes this process trust the local daemon's own certificate, and
// only it, for the daemon's loopback address: the certificate names the host
// other devices use, not 127.0.0.1, so ordinary verification would refuse it.
// Requests to any other host keep the default transport and its verification.
func pinLocal(server, certFile string) error {
	u, err := url.Parse(server)
	if err != nil {
		return fmt.Errorf("client: %s: %w", server, err)
	}
	leaf, err := readPin(certFile)
	if err != nil {
		return err
	}
	pinOnce.Lock()
	defer pinOnce.Unlock()
	base := http.DefaultTransport
	if p, ok := base.(*pinnedHost); ok {
		base = p.base
	}
	bt, ok := base.(*http.Transport)
	if !ok {
		bt = &http.Transport{}
	}
	pinned := bt.Clone()
	pinned.TLSClientConfig = &tls.Config{
		InsecureSkipVerify: true, // replaced by the pin below, which is stricter
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) > 0 && bytes.Equal(raw[0], leaf) {
				return nil
			}
			// Renewed since this process read the pin: the daemon rewrites
			// the file before it serves a new certificate.
			if now, err := readPin(certFile); err == nil && len(raw) > 0 && bytes.Equal(raw[0], now) {
				return nil
			}
			return errors.New("client: the local daemon presented another certificate than " + certFile)
		},
		NextProtos: []string{"http/1.1"},
	}
	http.DefaultTransport = &pinnedHost{host: u.Host, pinned: pinned, base: base}
	return nil
}

// pinnedHost sends requests for one host through a transport that pins its
// certificate, and the rest through base.
type pinnedHost struct {
	host   string
	pinned *http.Transport
	base   http.RoundTripper
}

func (p *pinnedHost) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host == p.host {
		return p.pinned.RoundTrip(r)
	}
	return p.base.RoundTrip(r)
}

// readPin reads the leaf certificate (DER) of a pin file.
func readPin(certFile string) ([]byte, error) {
	b, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("client: the local daemon serves HTTPS but its certificate is not in %s: %w", certFile, err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, fmt.Errorf("client: %s holds no PEM certificate", certFile)
	}
	if _, err := x509.ParseCertificate(blk.Bytes); err != nil {
		return nil, fmt.Errorf("client: %s: %w", certFile, err)
	}
	return blk.Bytes, nil
}
