package auth

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A login code works once, and not after CodeTTL; a restart (a new Sessions
// over the same data directory) knows no code, so a used code stays used.
func TestLoginCodeOnceAndExpires(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenSessions(dir)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	s.now = func() time.Time { return now }
	code, exp, err := s.NewCode()
	if err != nil || !exp.Equal(now.Add(CodeTTL)) {
		t.Fatalf("NewCode: %v, expires %v", err, exp)
	}
	if !s.UseCode(code) || s.UseCode(code) {
		t.Fatal("a code must work exactly once")
	}
	late, _, _ := s.NewCode()
	now = now.Add(CodeTTL + time.Second)
	if s.UseCode(late) {
		t.Fatal("a code worked after CodeTTL")
	}
	unused, _, _ := s.NewCode()
	restarted, err := OpenSessions(dir)
	if err != nil {
		t.Fatal(err)
	}
	if restarted.UseCode(code) || restarted.UseCode(unused) {
		t.Fatal("a code survived a restart")
	}
}

// Sessions survive a restart, stored hashed (0600); a revoked or expired one
// signs nobody in; use slides the expiry.
func TestSessionsPersistHashedAndRevoke(t *testing.T) {
	dir := t.TempDir()
	s, _ := OpenSessions(dir)
	now := time.Now()
	s.now = func() time.Time { return now }
	id, err := s.Create()
	if err != nil {
		t.Fatal(err)
	}
	other, _ := s.Create()
	b, err := os.ReadFile(filepath.Join(dir, SessionsFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), id) {
		t.Fatal("the sessions file holds a session id in clear")
	}
	if st, _ := os.Stat(filepath.Join(dir, SessionsFile)); st.Mode().Perm() != 0o600 {
		t.Fatalf("sessions file mode %v, want 0600", st.Mode().Perm())
	}
	r, err := OpenSessions(dir)
	if err != nil {
		t.Fatal(err)
	}
	r.now = s.now
	if !r.Valid(id) || !r.Valid(other) || r.Valid("forged") || r.Valid("") {
		t.Fatal("after a restart: sessions lost or a forged one accepted")
	}
	if err := r.Revoke(id); err != nil || r.Valid(id) {
		t.Fatalf("revoke: %v", err)
	}
	if r2, _ := OpenSessions(dir); r2.Valid(id) {
		t.Fatal("a revoked session came back after a restart")
	}
	// Used 29 days on, the session slides; unused for SessionTTL it ends.
	now = now.Add(29 * 24 * time.Hour)
	if !r.Valid(other) {
		t.Fatal("session ended before SessionTTL")
	}
	now = now.Add(29 * 24 * time.Hour)
	if !r.Valid(other) {
		t.Fatal("a used session did not slide")
	}
	now = now.Add(SessionTTL + time.Second)
	if r.Valid(other) {
		t.Fatal("a session outlived SessionTTL unused")
	}
}
