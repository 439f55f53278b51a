// Package webpushsvc is a Web Push service stand-in on loopback, for tests: it
// plays the browser vendor's push service (RFC 8030) and the phone behind it.
// It serves HTTPS only, with a certificate of its own CA: a daemon reaches it
// with Net (that CA, loopback allowed), set from Go test code alone.
// Each push is checked as a real service checks it: the VAPID JWT (RFC 8292:
// ES256 signature with the key in the header, which must be the daemon's,
// audience, expiry) and the aes128gcm payload (RFC 8291), which it decrypts
// with the subscription's private keys, so a test asserts what the phone would
// show. Written apart from the library parley sends with, so it is no echo of it.
package webpushsvc

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/push"
)

// Push is one push the service accepted, decrypted.
type Push struct {
	Sub       string // the subscription's id
	Urgency   string
	Topic     string
	TTL       string
	Plaintext []byte
}

// Service is the stand-in.
type Service struct {
	srv *httptest.Server

	mu       sync.Mutex
	vapid    []byte // the daemon's VAPID public key, once told
	subs     map[string]*Sub
	pushes   []Push
	attempts map[string]int // per subscription: every request, accepted or not
	rejected []string
	notify   chan struct{}
}

// Sub is one browser's subscription: its keys stay here, as on a phone.
type Sub struct {
	ID     string
	priv   *ecdh.PrivateKey
	auth   []byte
	status int // what the service answers its pushes: 201, or 410, 500…
}

// Start runs the service on loopback, over TLS, until the test ends.
func Start(t testing.TB) *Service {
	s := &Service{subs: map[string]*Sub{}, attempts: map[string]int{}, notify: make(chan struct{}, 1)}
	s.srv = NewServer(t, http.HandlerFunc(s.handle))
	return s
}

// NewServer serves h over TLS on loopback with a certificate of the
// stand-in's CA, until the test ends: another server a push may be sent to
// (one that redirects, say).
func NewServer(t testing.TB, h http.Handler) *httptest.Server {
	leaf, err := theCA().leaf()
	if err != nil {
		t.Fatalf("webpushsvc: certificate: %v", err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{leaf}, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// Net is how a daemon under test reaches the stand-in: its CA trusted and
// loopback dialled (which parley's own Net refuses).
func Net() push.Net { return netWith(theCA().pool) }

// CAPEM is the stand-in's CA certificate, PEM: for a daemon in a child
// process of the test (NetFromPEM).
func CAPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: theCA().cert.Raw})
}

// NetFromPEM is Net in a child process of the test that started the stand-in,
// given its CAPEM.
func NetFromPEM(caPEM []byte) (push.Net, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return push.Net{}, errors.New("webpushsvc: no certificate in the CA PEM")
	}
	return netWith(pool), nil
}

func netWith(pool *x509.CertPool) push.Net {
	return push.Net{RootCAs: pool, Allow: func(a netip.Addr) error {
		if a.Unmap().IsLoopback() {
			return nil
		}
		return fmt.Errorf("%w: %s is not the stand-in's loopback", push.ErrRefusedAddress, a)
	}}
}

// ca is the stand-in's certificate authority, one per test process.
type ca struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

var theCA = sync.OnceValue(func() *ca {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "webpushsvc test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		panic(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &ca{cert: cert, key: key, pool: pool}
})

// leaf is a server certificate for 127.0.0.1, ::1 and localhost.
func (c *ca) leaf() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: "webpushsvc"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: append([]string{"localhost"}, pushHosts...), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// Endpoint is a subscription's endpoint as a browser would give it, with
// host in place of the stand-in's address (e.g. "localhost", for a test of
// a name that resolves to loopback).
func (s *Service) Endpoint(sub *Sub, host string) string {
	u, _ := url.Parse(s.srv.URL)
	u.Host = net.JoinHostPort(host, u.Port())
	return u.String() + "/push/" + sub.ID
}

// URL is the service's base URL.
func (s *Service) URL() string { return s.srv.URL }

// ExpectKey sets the VAPID public key (URL-safe base64, as GET /api/push/key
// answers) every push must be signed with.
func (s *Service) ExpectKey(t testing.TB, publicKey string) {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(publicKey, "="))
	if err != nil || len(b) != 65 {
		t.Fatalf("webpushsvc: VAPID key %q: %v", publicKey, err)
	}
	s.mu.Lock()
	s.vapid = b
	s.mu.Unlock()
}

// Subscribe makes a subscription, as a browser's pushManager.subscribe does,
// and returns it with its PushSubscription JSON.
func (s *Service) Subscribe(t testing.TB) (*Sub, json.RawMessage) {
	priv, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	auth := make([]byte, 16)
	rand.Read(auth)
	id := make([]byte, 8)
	rand.Read(id)
	sub := &Sub{ID: fmt.Sprintf("%x", id), priv: priv, auth: auth, status: http.StatusCreated}
	s.mu.Lock()
	s.subs[sub.ID] = sub
	s.mu.Unlock()
	b, _ := json.Marshal(map[string]any{"endpoint": s.srv.URL + "/push/" + sub.ID, "expirationTime": nil,
		"keys": map[string]string{"p256dh": base64.RawURLEncoding.EncodeToString(priv.PublicKey().Bytes()),
			"auth": base64.RawURLEncoding.EncodeToString(auth)}})
	return sub, b
}

// SetStatus sets what the service answers a subscription's pushes (410 Gone
// for one the browser dropped, 500 for an outage, 201 again after).
func (s *Service) SetStatus(sub *Sub, status int) {
	s.mu.Lock()
	sub.status = status
	s.mu.Unlock()
}

// Pushes returns the pushes accepted so far.
func (s *Service) Pushes() []Push {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Push(nil), s.pushes...)
}

// Attempts is how many pushes were tried on a subscription, whatever the answer.
func (s *Service) Attempts(sub *Sub) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts[sub.ID]
}

// Rejected returns why pushes were refused (a bad JWT, a payload that did not
// decrypt); a test wants none.
func (s *Service) Rejected() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.rejected...)
}

// WaitFor waits until match holds for the pushes so far, or fails the test.
func (s *Service) WaitFor(t testing.TB, within time.Duration, what string, match func([]Push) bool) []Push {
	t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		ps := s.Pushes()
		if match(ps) {
			return ps
		}
		select {
		case <-s.notify:
		case <-deadline.C:
			t.Fatalf("webpushsvc: %s: not within %v; pushes: %s; rejected: %v", what, within, Summary(ps), s.Rejected())
		}
	}
}

// Summary prints pushes for a failure message.
func Summary(ps []Push) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "\n  %s urgency=%s %s", p.Sub, p.Urgency, p.Plaintext)
	}
	return b.String()
}

func (s *Service) signal() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

func (s *Service) handle(w http.ResponseWriter, r *http.Request) {
	id, ok := strings.CutPrefix(r.URL.Path, "/push/")
	s.mu.Lock()
	sub := s.subs[id]
	vapid := s.vapid
	status := 0
	if sub != nil {
		status = sub.status
	}
	s.mu.Unlock()
	if r.Method != http.MethodPost || !ok || sub == nil {
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	s.attempts[id]++
	s.mu.Unlock()
	defer s.signal()
	body, _ := io.ReadAll(io.LimitReader(r.Body, 8192))
	p, err := s.check(r, body, sub, vapid)
	if err != nil {
		s.mu.Lock()
		s.rejected = append(s.rejected, err.Error())
		s.mu.Unlock()
		s.signal()
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if status != http.StatusCreated {
		http.Error(w, "as the test set", status)
		return
	}
	s.mu.Lock()
	s.pushes = append(s.pushes, p)
	s.mu.Unlock()
	s.signal()
	w.WriteHeader(http.StatusCreated)
}

func (s *Service) check(r *http.Request, body []byte, sub *Sub, vapid []byte) (Push, error) {
	if err := checkVAPID(r.Header.Get("Authorization"), "https://"+r.Host, vapid); err != nil { // aud: the origin the push was addressed to
		return Push{}, err
	}
	if ce := r.Header.Get("Content-Encoding"); ce != "aes128gcm" {
		return Push{}, fmt.Errorf("Content-Encoding %q, want aes128gcm", ce)
	}
	if r.Header.Get("TTL") == "" {
		return Push{}, errors.New("no TTL header (RFC 8030 section 5.2 requires it)")
	}
	plain, err := decrypt(body, sub.priv, sub.auth)
	if err != nil {
		return Push{}, fmt.Errorf("payload: %w", err)
	}
	return Push{Sub: sub.ID, Urgency: r.Header.Get("Urgency"), Topic: r.Header.Get("Topic"), TTL: r.Header.Get("TTL"), Plaintext: plain}, nil
}

// checkVAPID checks "vapid t=<JWT>, k=<key>" (RFC 8292 section 3).
func checkVAPID(h, origin string, want []byte) error {
	rest, ok := strings.CutPrefix(h, "vapid ")
	if !ok {
		return fmt.Errorf("the Authorization header %q is not vapid", h)
	}
	var tok, key string
	for _, part := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			tok = v
		case "k":
			key = v
		}
	}
	k, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(key, "="))
	if err != nil {
		return fmt.Errorf("vapid k: %w", err)
	}
	if want == nil || !bytes.Equal(k, want) {
		return errors.New("vapid k is not the daemon's public key")
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), k)
	if err != nil {
		return fmt.Errorf("vapid k: %w", err)
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return errors.New("vapid t is not a JWT")
	}
	var hdr struct{ Alg, Typ string }
	var claims struct {
		Aud string `json:"aud"`
		Exp int64  `json:"exp"`
		Sub string `json:"sub"`
	}
	if err := decodePart(parts[0], &hdr); err != nil || hdr.Alg != "ES256" {
		return fmt.Errorf("JWT header %+v: %v", hdr, err)
	}
	if err := decodePart(parts[1], &claims); err != nil {
		return fmt.Errorf("JWT claims: %w", err)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return errors.New("JWT signature is not 64 bytes of r||s")
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if !ecdsa.Verify(pub, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return errors.New("JWT signature does not verify with the VAPID key")
	}
	if claims.Aud != origin {
		return fmt.Errorf("JWT aud %q, want the push service's origin %q", claims.Aud, origin)
	}
	now := time.Now().Unix()
	if claims.Exp <= now || claims.Exp > now+24*3600 {
		return fmt.Errorf("JWT exp %d is not within 24 hours from now (%d)", claims.Exp, now)
	}
	if !strings.HasPrefix(claims.Sub, "mailto:") && !strings.HasPrefix(claims.Sub, "https:") {
		return fmt.Errorf("JWT sub %q is no mailto: or https: contact", claims.Sub)
	}
	return nil
}

func decodePart(p string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// decrypt opens an aes128gcm body (RFC 8188) with the keys of RFC 8291.
func decrypt(body []byte, priv *ecdh.PrivateKey, auth []byte) ([]byte, error) {
	if len(body) < 21 {
		return nil, errors.New("body shorter than its header")
	}
	salt, rs, idlen := body[:16], binary.BigEndian.Uint32(body[16:20]), int(body[20])
	if len(body) < 21+idlen || idlen != 65 {
		return nil, fmt.Errorf("keyid of %d bytes, want the sender's 65-byte public key", idlen)
	}
	asPub, err := ecdh.P256().NewPublicKey(body[21 : 21+idlen])
	if err != nil {
		return nil, err
	}
	ct := body[21+idlen:]
	if uint32(len(ct)) > rs {
		return nil, fmt.Errorf("more than one record (%d bytes, rs %d)", len(ct), rs)
	}
	secret, err := priv.ECDH(asPub)
	if err != nil {
		return nil, err
	}
	info := append(append([]byte("WebPush: info\x00"), priv.PublicKey().Bytes()...), asPub.Bytes()...)
	ikm, err := hkdf.Key(sha256.New, secret, auth, string(info), 32)
	if err != nil {
		return nil, err
	}
	cek, err := hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: aes128gcm\x00", 16)
	if err != nil {
		return nil, err
	}
	nonce, err := hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: nonce\x00", 12)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(cek)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	plain, err := gcm.Open(nil, nonce, ct, nil)
	if err != nil {
		return nil, fmt.Errorf("decrypt: %w", err)
	}
	plain = bytes.TrimRight(plain, "\x00")
	if len(plain) == 0 || plain[len(plain)-1] != 2 {
		return nil, errors.New("the last record lacks its 0x02 delimiter")
	}
	return plain[:len(plain)-1], nil
}

// Messages decodes, in order, the payloads a subscription got.
func Messages[T any](ps []Push, sub *Sub) []T {
	var out []T
	for _, p := range ps {
		if p.Sub == sub.ID {
			var m T
			_ = json.Unmarshal(p.Plaintext, &m)
			out = append(out, m)
		}
	}
	return out
}
