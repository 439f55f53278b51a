package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"
)

// ServerName is the name in the hub's certificate, and the only name a node
// checks: the hub may sit behind any address, and trust comes from the CA the
// join token pins, not from DNS.
const ServerName = "parley-hub"

// Files in <data>/cluster. Keys are written 0600.
const (
	dirName      = "cluster"
	caCertFile   = "ca.pem"
	caKeyFile    = "ca.key"
	hubCertFile  = "hub.pem"
	hubKeyFile   = "hub.key"
	adminSeed    = "admin.seed"
	joinKeyFile  = "join.key"
	registryFile = "nodes.json"
	addrFile     = "addr"
	// On a node:
	hubCAFile = "hub-ca.pem"
	nodeSeed  = "node.seed"
)

// Dir is the cluster directory inside a data directory.
func Dir(dataDir string) string { return filepath.Join(dataDir, dirName) }

// Fingerprint is the hex SHA-256 of a certificate's DER bytes.
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

// authority is the hub's CA and the server certificate it signed.
type authority struct {
	caDER  []byte
	server tls.Certificate
}

// loadOrCreateAuthority reads the hub's CA and certificate from dir, making
// them at first start. The CA key never leaves the hub's data directory.
func loadOrCreateAuthority(dir string) (*authority, error) {
	caPEM, err := os.ReadFile(filepath.Join(dir, caCertFile))
	if errors.Is(err, os.ErrNotExist) {
		if err := createAuthority(dir); err != nil {
			return nil, fmt.Errorf("cluster: make the hub's CA: %w", err)
		}
		caPEM, err = os.ReadFile(filepath.Join(dir, caCertFile))
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	block, _ := pem.Decode(caPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("cluster: %s holds no certificate", filepath.Join(dir, caCertFile))
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, hubCertFile), filepath.Join(dir, hubKeyFile))
	if err != nil {
		return nil, fmt.Errorf("cluster: the hub's certificate: %w", err)
	}
	return &authority{caDER: block.Bytes, server: cert}, nil
}

func createAuthority(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "parley hub CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(20, 0, 0),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	hubKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	hubTmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: ServerName},
		DNSNames:     []string{ServerName},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(20, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	hubDER, err := x509.CreateCertificate(rand.Reader, hubTmpl, ca, &hubKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	// The keys first, the CA certificate last: its presence says the set is whole.
	if err := writeKey(filepath.Join(dir, caKeyFile), caKey); err != nil {
		return err
	}
	if err := writeKey(filepath.Join(dir, hubKeyFile), hubKey); err != nil {
		return err
	}
	// The hub's chain carries the CA, so a joining node finds the pinned certificate.
	chain := append(pemCert(hubDER), pemCert(caDER)...)
	if err := writeFile(filepath.Join(dir, hubCertFile), chain, 0o644); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, caCertFile), pemCert(caDER), 0o644)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return n
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return writeFile(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
}

// writeFile writes atomically (a temporary file renamed over the path) with a mode.
func writeFile(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// serverTLS is the hub listener's TLS: TLS 1.3, no client certificates
// (nodes prove themselves with their nkey).
func (a *authority) serverTLS() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{a.server}, MinVersion: tls.VersionTLS13}
}

// pinnedTLS trusts only the CA whose certificate has the fingerprint fp and a
// server certificate it signed for ServerName. A joining node has nothing but
// the fingerprint, so the CA comes from the hub's own chain and is checked
// against the pin before anything else.
func pinnedTLS(fp string, got func(caDER []byte)) *tls.Config {
	return &tls.Config{
		MinVersion:         tls.VersionTLS13,
		ServerName:         ServerName,
		InsecureSkipVerify: true, // verified below, against the pin
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 {
				return errors.New("the hub sent no certificate")
			}
			var ca *x509.Certificate
			for _, der := range raw[1:] {
				if Fingerprint(der) == fp {
					c, err := x509.ParseCertificate(der)
					if err != nil {
						return err
					}
					ca = c
				}
			}
			if ca == nil {
				return fmt.Errorf("the hub's CA is not the one the token names (fingerprint %s…)", fp[:min(16, len(fp))])
			}
			leaf, err := x509.ParseCertificate(raw[0])
			if err != nil {
				return err
			}
			pool := x509.NewCertPool()
			pool.AddCert(ca)
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: ServerName}); err != nil {
				return fmt.Errorf("the hub's certificate: %w", err)
			}
			if got != nil {
				got(ca.Raw)
			}
			return nil
		},
	}
}

// caTLS trusts the CA in the PEM file path (the pinned CA kept at join, or
// the hub's own for its admin clients).
func caTLS(path string) (*tls.Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cluster: the hub's CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("cluster: %s holds no certificate", path)
	}
	return &tls.Config{MinVersion: tls.VersionTLS13, ServerName: ServerName, RootCAs: pool}, nil
}
