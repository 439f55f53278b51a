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
	"syscall"
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
	if uid, me := owner(st), os.Getuid(); uid != me {
		// Another user could have read it, or put their own token there.
		return "", fmt.Errorf("auth: %s belongs to user %d, not to parley's user %d: delete it (a new token is made) or chown it", p, uid, me)
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

// SecureDir makes the data directory (0700) when missing and checks the one
// there: it must belong to the running user (else it is refused), and one that
// others can write to (0777 and the like) is narrowed to 0700, the returned
// warning saying so: others could otherwise swap the token or the database.
func SecureDir(dir string) (warning string, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("data directory: %w", err)
	}
	st, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("data directory: %w", err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("data directory %s is not a directory", dir)
	}
	if uid, me := owner(st), os.Getuid(); uid != me {
		return "", fmt.Errorf("data directory %s belongs to user %d, not to parley's user %d: choose another (--data) or chown it", dir, uid, me)
	}
	perm := st.Mode().Perm()
	if perm&0o022 == 0 {
		return "", nil
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return "", fmt.Errorf("data directory %s is writable by others (mode %v) and could not be made 0700: %w", dir, perm, err)
	}
	return fmt.Sprintf("the data directory %s was writable by others (mode %v); it is now 0700", dir, perm), nil
}

// owner is a file's owner's user id.
func owner(st fs.FileInfo) int {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return int(sys.Uid)
	}
	return -1
}

// Equal compares a presented token with the real one in constant time.
func Equal(presented, token string) bool {
	return token != "" && subtle.ConstantTimeCompare([]byte(presented), []byte(token)) == 1
}
