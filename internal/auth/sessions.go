package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// SessionsFile in the data directory holds the browsers' sessions, hashed.
const SessionsFile = "sessions.json"

const (
	// CodeTTL is how long a login code (the link parley prints) is good for.
	CodeTTL = 5 * time.Minute
	// SessionTTL is how long a browser's session lasts unused; each use slides it.
	SessionTTL = 30 * 24 * time.Hour
	// slideEvery bounds the file's writes: a session's expiry moves at most once
	// in this time.
	slideEvery = time.Hour
)

// Sessions are the dashboard's sign-ins: one-time login codes, exchanged for a
// session whose id lives in an HttpOnly cookie. The long-lived token never
// reaches the browser's storage.
//
// Codes are kept in memory only: a restart forgets every code, so a used code
// can never be used again and an unused one simply expires (`parley
// login-link` prints a fresh one). Sessions are kept in SessionsFile (0600) as
// SHA-256 hashes of their ids with their expiry, so a browser stays signed in
// across restarts and a copy of the file signs nobody in.
type Sessions struct {
	path string
	now  func() time.Time

	mu       sync.Mutex
	codes    map[string]time.Time // hash → expiry
	sessions map[string]time.Time // hash → expiry
}

// OpenSessions loads dataDir's sessions, dropping expired ones. With dataDir ""
// sessions live in memory only.
func OpenSessions(dataDir string) (*Sessions, error) {
	s := &Sessions{now: time.Now, codes: map[string]time.Time{}, sessions: map[string]time.Time{}}
	if dataDir == "" {
		return s, nil
	}
	s.path = filepath.Join(dataDir, SessionsFile)
	b, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("auth: sessions: %w", err)
	}
	var f struct {
		Sessions map[string]time.Time `json:"sessions"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("auth: %s is not a sessions file (delete it to sign every browser out): %w", s.path, err)
	}
	now := s.now()
	for h, exp := range f.Sessions {
		if exp.After(now) {
			s.sessions[h] = exp
		}
	}
	return s, nil
}

func hash(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

func random(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("auth: random: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// NewCode makes a login code good for one use within CodeTTL.
func (s *Sessions) NewCode() (code string, expires time.Time, err error) {
	code, err = random(16)
	if err != nil {
		return "", time.Time{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for h, exp := range s.codes {
		if !exp.After(now) {
			delete(s.codes, h)
		}
	}
	expires = now.Add(CodeTTL)
	s.codes[hash(code)] = expires
	return code, expires, nil
}

// UseCode spends a login code: true once, within its time.
func (s *Sessions) UseCode(code string) bool {
	if code == "" {
		return false
	}
	h := hash(code)
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.codes[h]
	delete(s.codes, h)
	return ok && exp.After(s.now())
}

// Create starts a session and returns its id (the cookie's value).
func (s *Sessions) Create() (string, error) {
	id, err := random(32)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessions[hash(id)] = s.now().Add(SessionTTL)
	return id, s.saveLocked()
}

// Valid reports whether id is a live session, sliding its expiry.
func (s *Sessions) Valid(id string) bool {
	if id == "" {
		return false
	}
	h := hash(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.sessions[h]
	now := s.now()
	if !ok {
		return false
	}
	if !exp.After(now) {
		delete(s.sessions, h)
		return false
	}
	if next := now.Add(SessionTTL); next.Sub(exp) >= slideEvery {
		s.sessions[h] = next
		_ = s.saveLocked() // a failed write only shortens the session
	}
	return true
}

// Revoke ends a session (sign-out).
func (s *Sessions) Revoke(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := hash(id)
	if _, ok := s.sessions[h]; !ok {
		return nil
	}
	delete(s.sessions, h)
	return s.saveLocked()
}

// saveLocked writes the sessions file whole (write, then rename), mode 0600.
func (s *Sessions) saveLocked() error {
	if s.path == "" {
		return nil
	}
	now := s.now()
	live := make(map[string]time.Time, len(s.sessions))
	for h, exp := range s.sessions {
		if exp.After(now) {
			live[h] = exp
		}
	}
	b, err := json.Marshal(map[string]any{"sessions": live})
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.path), ".sessions-*")
	if err != nil {
		return fmt.Errorf("auth: sessions: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("auth: sessions: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("auth: sessions: %w", err)
	}
	if err := os.Rename(tmp.Name(), s.path); err != nil {
		return fmt.Errorf("auth: sessions: %w", err)
	}
	return nil
}
