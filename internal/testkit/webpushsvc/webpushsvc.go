// Package webpushsvc is a Web Push service stand-in on loopback, for tests: it
// plays the browser vendor's push service (RFC 8030) and the phone behind it.
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
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
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

// Start runs the service on loopback until the test ends.
func Start(t testing.TB) *Service {
	s := &Service{subs: map[string]*Sub{}, attempts: map[string]int{}, notify: make(chan struct{}, 1)}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.srv.Close)
	return s
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
	if err := checkVAPID(r.Header.Get("Authorization"), s.srv.URL, vapid); err != nil {
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
