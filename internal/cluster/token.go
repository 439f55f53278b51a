package cluster

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/config"
)

// Join tokens. A token is "pj1." + base64url(claims) + "." + base64url(MAC):
// the MAC is HMAC-SHA256 under the hub's join key (<data>/cluster/join.key,
// 0600), so a token cannot be altered; its id is recorded at the hub when it
// is used (JetStream KV, create-only), so it works once; it carries its expiry.
// Making one needs only the hub's data directory, not the running hub.

const tokenPrefix = "pj1."

// Token TTL range for `parley join-token --ttl`.
const (
	MinTokenTTL     = time.Minute
	MaxTokenTTL     = 24 * time.Hour
	DefaultTokenTTL = 15 * time.Minute
)

// Sentinel errors a join is refused with (the hub's answer carries their text).
var (
	ErrTokenInvalid = errors.New("the join token is not valid (altered, or not made by this hub)")
	ErrTokenExpired = errors.New("the join token has expired")
	ErrTokenUsed    = errors.New("the join token was already used")
)

// Claims are what a token says.
type Claims struct {
	// Hub is the address nodes dial.
	Hub string `json:"hub"`
	// CA is the fingerprint (hex SHA-256) of the hub's CA certificate.
	CA string `json:"ca"`
	// Node, when set, is the only name the token may join as.
	Node string `json:"node,omitempty"`
	// Expires is a Unix time in seconds.
	Expires int64 `json:"exp"`
	// ID is random; the hub records it when the token is used.
	ID string `json:"id"`
	// Pass is the password of the hub's join user, which may only send a
	// join request; a used token's pass alone joins nothing.
	Pass string `json:"pass"`
}

// CheckName says why a node name cannot be used, or nil.
func CheckName(name string) error { return config.CheckNodeName(name) }

// joinKey reads the hub's token key, making it at first use.
func joinKey(dir string) ([]byte, error) {
	path := filepath.Join(dir, joinKeyFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		key := make([]byte, 32)
		rand.Read(key)
		// Written whole under another name, then linked into place: a hub
		// starting at the same moment finds either no file or all of it.
		made, err := writeNew(dir, path, []byte(hex.EncodeToString(key)+"\n"))
		if err != nil {
			return nil, err
		}
		if made {
			return key, nil
		}
		// Another process made it first. (err is this block's own: the
		// outer one still says the file did not exist.)
		if data, err = os.ReadFile(path); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(data)))
	if err != nil || len(key) != 32 {
		return nil, fmt.Errorf("cluster: %s is damaged", path)
	}
	return key, nil
}

// writeNew makes path with data (mode 0600) unless it exists, reporting
// whether it made it. The file appears complete or not at all.
func writeNew(dir, path string, data []byte) (bool, error) {
	f, err := os.CreateTemp(dir, ".new-*")
	if err != nil {
		return false, err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, err
	}
	switch err := os.Link(f.Name(), path); {
	case err == nil:
		return true, nil
	case errors.Is(err, os.ErrExist):
		return false, nil
	default:
		return false, err
	}
}

func joinPass(key []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("parley join user"))
	return hex.EncodeToString(m.Sum(nil))
}

func mac(key []byte, payload string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// IssueToken makes a join token for the hub whose data directory is dataDir,
// reachable at hubAddr, valid until expires, limited to node when set.
func IssueToken(dataDir, hubAddr, node string, expires time.Time) (string, error) {
	if expires.After(time.Now().Add(MaxTokenTTL)) {
		return "", fmt.Errorf("cluster: a join token lives at most %s", MaxTokenTTL)
	}
	if node != "" {
		if err := CheckName(node); err != nil {
			return "", err
		}
	}
	dir := Dir(dataDir)
	key, err := joinKey(dir)
	if err != nil {
		return "", err
	}
	a, err := loadOrCreateAuthority(dir)
	if err != nil {
		return "", err
	}
	id := make([]byte, 16)
	rand.Read(id)
	c := Claims{Hub: hubAddr, CA: Fingerprint(a.caDER), Node: node, Expires: expires.Unix(),
		ID: hex.EncodeToString(id), Pass: joinPass(key)}
	return signClaims(key, c)
}

func signClaims(key []byte, c Claims) (string, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	payload := base64.RawURLEncoding.EncodeToString(b)
	return tokenPrefix + payload + "." + base64.RawURLEncoding.EncodeToString(mac(key, payload)), nil
}

// ParseToken reads a token's claims without checking its MAC (a node cannot:
// the hub checks it at join).
func ParseToken(tok string) (Claims, string, []byte, error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(tok), tokenPrefix)
	payload, sig64, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 {
		return Claims{}, "", nil, ErrTokenInvalid
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return Claims{}, "", nil, ErrTokenInvalid
	}
	sig, err := base64.RawURLEncoding.DecodeString(sig64)
	if err != nil {
		return Claims{}, "", nil, ErrTokenInvalid
	}
	var c Claims
	if err := json.Unmarshal(b, &c); err != nil || c.Hub == "" || len(c.CA) != 64 || c.ID == "" {
		return Claims{}, "", nil, ErrTokenInvalid
	}
	return c, payload, sig, nil
}

// verifyToken checks a token's MAC and expiry against the hub's key; the hub
// then records its id (hub.go) to make it one-time.
func verifyToken(key []byte, tok string, now time.Time) (Claims, error) {
	c, payload, sig, err := ParseToken(tok)
	if err != nil {
		return Claims{}, err
	}
	if !hmac.Equal(sig, mac(key, payload)) {
		return Claims{}, ErrTokenInvalid
	}
	if now.Unix() >= c.Expires {
		return Claims{}, ErrTokenExpired
	}
	// A token living longer than the record of its use could be used again
	// once that record is gone: none is made so, none is taken.
	if c.Expires > now.Add(MaxTokenTTL+time.Minute).Unix() {
		return Claims{}, ErrTokenInvalid
	}
	return c, nil
}
