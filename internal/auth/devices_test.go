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
	t.Parallel()
	dir := t.TempDir()
	s, err := OpenDevices(dir)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	s.now = func() time.Time { return now }
	code, exp, err := s.NewCode("")
	if err != nil || !exp.Equal(now.Add(CodeTTL)) {
		t.Fatalf("NewCode: %v, expires %v", err, exp)
	}
	if !used(s, code) || used(s, code) {
		t.Fatal("a code must work exactly once")
	}
	late, _, _ := s.NewCode("")
	now = now.Add(CodeTTL + time.Second)
	if used(s, late) {
		t.Fatal("a code worked after CodeTTL")
	}
	unused, _, _ := s.NewCode("")
	restarted, err := OpenDevices(dir)
	if err != nil {
		t.Fatal(err)
	}
	if used(restarted, code) || used(restarted, unused) {
		t.Fatal("a code survived a restart")
	}
}

// Sessions survive a restart, stored hashed (0600); a revoked or expired one
// signs nobody in; use slides the expiry.
func TestSessionsPersistHashedAndRevoke(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, _ := OpenDevices(dir)
	now := time.Now()
	s.now = func() time.Time { return now }
	id, _, err := s.Create("laptop", KindBrowser)
	if err != nil {
		t.Fatal(err)
	}
	other, _, _ := s.Create("phone", KindBrowser)
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
	r, err := OpenDevices(dir)
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
	if r2, _ := OpenDevices(dir); r2.Valid(id) {
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

func used(s *Devices, code string) bool {
	_, ok := s.UseCode(code)
	return ok
}

// A pairing code carries the device's name (cleaned: no control characters,
// bounded); spending it once signs in one device of that name, listed until
// revoked by id, which ends its session at once and across a restart.
func TestPairCodeDeviceAndRevoke(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, _ := OpenDevices(dir)
	code, _, err := s.NewPairCode("", "  Ann's\x1b[31m phone\n"+strings.Repeat("x", 100))
	if err != nil {
		t.Fatal(err)
	}
	name, ok := s.UseCode(code)
	if !ok || strings.ContainsAny(name, "\x1b\n") || len(name) > MaxDeviceName || !strings.HasPrefix(name, "Ann's [31m phone") {
		t.Fatalf("pair code gave name %q ok=%v", name, ok)
	}
	if _, ok := s.UseCode(code); ok {
		t.Fatal("a pairing code worked twice")
	}
	phone, dev, err := s.Create(name, KindProgram)
	if err != nil {
		t.Fatal(err)
	}
	laptop, _, _ := s.Create("", KindBrowser)
	if got, ok := s.Lookup(phone); !ok || got.ID != dev.ID || got.Kind != KindProgram {
		t.Fatalf("lookup: %+v %v", got, ok)
	}
	if ds := s.List(); len(ds) != 2 || ds[0].ID != dev.ID || ds[1].Name != KindBrowser {
		t.Fatalf("devices: %+v", ds)
	}
	if found, err := s.RevokeDevice(dev.ID, ""); !found || err != nil {
		t.Fatalf("revoke: %v %v", found, err)
	}
	if found, _ := s.RevokeDevice(dev.ID, ""); found {
		t.Fatal("a device was revoked twice")
	}
	if s.Valid(phone) || !s.Valid(laptop) {
		t.Fatal("revoking one device must end its session and no other")
	}
	r, _ := OpenDevices(dir)
	if r.Valid(phone) || !r.Valid(laptop) || len(r.List()) != 1 {
		t.Fatal("after a restart a revoked device came back or a live one was lost")
	}
}

// A sessions file of the version before devices keeps its browsers signed in,
// each as a device.
func TestSessionsFileBeforeDevices(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	secret := "0123456789abcdef0123456789abcdef"
	old := `{"sessions":{"` + hash(secret) + `":"` + time.Now().Add(time.Hour).UTC().Format(time.RFC3339) + `"}}`
	if err := os.WriteFile(filepath.Join(dir, SessionsFile), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := OpenDevices(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := s.Lookup(secret); !ok || d.Kind != KindBrowser || len(s.List()) != 1 {
		t.Fatalf("old session lost: %+v %v", d, ok)
	}
}

// A sessions file of an earlier version holding a short hash (hand-edited,
// truncated) opens without that entry instead of panicking.
func TestOldSessionsFileWithAShortHashOpens(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	exp := time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano)
	if err := os.WriteFile(filepath.Join(dir, SessionsFile), []byte(`{"sessions":{"abc":"`+exp+`"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := OpenDevices(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(s.List()); n != 0 {
		t.Fatalf("%d devices from a short hash", n)
	}
}
