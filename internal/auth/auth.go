// Package auth keeps parley's access token: made at first start in the data
// directory (mode 0600), required on every API, socket and page request.
package auth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// FileName is the token's file inside the data directory.
const FileName = "token"

// LoadOrCreate returns the token in dataDir, creating it (and the directory) when
// missing. A token file readable by others is refused, as ssh refuses such keys.
func LoadOrCreate(dataDir string) (string, error) {
	tok, err := Load(dataDir)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return tok, err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", fmt.Errorf("auth: data directory: %w", err)
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("auth: random: %w", err)
	}
	tok = hex.EncodeToString(b[:])
	p := filepath.Join(dataDir, FileName)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return Load(dataDir) // another process made it first
	}
	if err != nil {
		return "", fmt.Errorf("auth: create token: %w", err)
	}
	if _, err := f.WriteString(tok + "\n"); err != nil {
		f.Close()
		return "", fmt.Errorf("auth: write token: %w", err)
	}
	return tok, f.Close()
}

// Load reads the token in dataDir.
func Load(dataDir string) (string, error) {
	p := filepath.Join(dataDir, FileName)
	st, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("auth: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("auth: %s is readable by others (mode %v): run chmod 600 %s", p, st.Mode().Perm(), p)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("auth: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) < 16 {
		return "", fmt.Errorf("auth: %s holds no usable token (delete it to make a new one)", p)
	}
	return tok, nil
}

// Equal compares a presented token with the real one in constant time.
func Equal(presented, token string) bool {
	return token != "" && subtle.ConstantTimeCompare([]byte(presented), []byte(token)) == 1
}
