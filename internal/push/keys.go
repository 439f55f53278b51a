package push

import (
	"crypto/ecdh"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	webpush "github.com/SherClockHolmes/webpush-go"
)

// KeysFile in the data directory holds the VAPID key pair (mode 0600).
const KeysFile = "vapid.json"

// Keys are the VAPID key pair, URL-safe base64: the public key is the P-256
// point browsers get as applicationServerKey; the private key signs each
// push's JWT.
type Keys struct {
	Public  string `json:"public_key"`
	Private string `json:"private_key"`
}

// LoadOrCreateKeys reads dataDir's VAPID keys, making them at first start.
// Changing them would orphan every subscription, so a bad file is an error,
// not a reason to make new ones.
func LoadOrCreateKeys(dataDir string) (Keys, error) {
	p := filepath.Join(dataDir, KeysFile)
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		priv, pub, err := webpush.GenerateVAPIDKeys()
		if err != nil {
			return Keys{}, fmt.Errorf("push: keys: %w", err)
		}
		k := Keys{Public: pub, Private: priv}
		out, _ := json.Marshal(k)
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			return LoadOrCreateKeys(dataDir)
		}
		if err != nil {
			return Keys{}, fmt.Errorf("push: keys: %w", err)
		}
		if _, err := f.Write(out); err != nil {
			f.Close()
			return Keys{}, fmt.Errorf("push: keys: %w", err)
		}
		return k, f.Close()
	}
	if err != nil {
		return Keys{}, fmt.Errorf("push: keys: %w", err)
	}
	if st, err := os.Stat(p); err == nil && st.Mode().Perm()&0o077 != 0 {
		return Keys{}, fmt.Errorf("push: %s is readable by others (mode %v): run chmod 600 %s", p, st.Mode().Perm(), p)
	}
	var k Keys
	if err := json.Unmarshal(b, &k); err != nil || k.Public == "" || k.Private == "" {
		return Keys{}, fmt.Errorf("push: %s holds no VAPID keys (delete it to make new ones; every device must then subscribe again)", p)
	}
	pub, err := decodeKey(k.Public)
	if err == nil {
		_, err = ecdh.P256().NewPublicKey(pub)
	}
	if err != nil {
		return Keys{}, fmt.Errorf("push: %s: the public key is no P-256 point: %v", p, err)
	}
	return k, nil
}

// decodeKey reads URL-safe base64 with or without padding.
func decodeKey(s string) ([]byte, error) {
	if b, err := base64.RawURLEncoding.DecodeString(s); err == nil {
		return b, nil
	}
	return base64.URLEncoding.DecodeString(s)
}
