package auth

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// someoneElse is a user id that is not the running user's.
func someoneElse() int {
	if os.Getuid() == 4242 {
		return 4243
	}
	return 4242
}

// chownOrSkip gives p to someone else; only a user allowed to chown (root, as in
// CI on this project's machines) can make such a file.
func chownOrSkip(t *testing.T, p string) {
	t.Helper()
	if err := os.Chown(p, someoneElse(), -1); err != nil {
		if errors.Is(err, syscall.EPERM) {
			t.Skip("making a file another user owns needs CAP_CHOWN (CI runs as root)")
		}
		t.Fatal(err)
	}
}

func TestTokenFileOfAnotherUserIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tok, err := LoadOrCreate(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := Load(dir); err != nil || got != tok {
		t.Fatalf("Load of our own token: got %q, %v", got, err)
	}
	chownOrSkip(t, filepath.Join(dir, FileName))
	_, err = Load(dir)
	if err == nil || !strings.Contains(err.Error(), "belongs to user") {
		t.Fatalf("Load of a token file another user owns (mode 0600): got %v, want a refusal naming its owner", err)
	}
	if _, err := LoadOrCreate(dir); err == nil {
		t.Fatal("LoadOrCreate used a token file another user owns")
	}
}

func TestDataDirectory(t *testing.T) {
	t.Parallel()
	t.Run("made 0700", func(t *testing.T) {
		old := syscall.Umask(0)
		defer syscall.Umask(old)
		dir := filepath.Join(t.TempDir(), "a", "data")
		if w, err := SecureDir(dir); err != nil || w != "" {
			t.Fatalf("new directory: got %q, %v", w, err)
		}
		if st, _ := os.Stat(dir); st.Mode().Perm() != 0o700 {
			t.Fatalf("new directory: mode %v, want 0700", st.Mode().Perm())
		}
	})
	t.Run("writable by others is narrowed, with a warning", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "data")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		w, err := SecureDir(dir)
		if err != nil || !strings.Contains(w, "was writable by others (mode -rwxrwxrwx); it is now 0700") {
			t.Fatalf("0777 directory: got %q, %v; want a warning that it was narrowed", w, err)
		}
		if st, _ := os.Stat(dir); st.Mode().Perm() != 0o700 {
			t.Fatalf("0777 directory after: mode %v, want 0700", st.Mode().Perm())
		}
	})
	t.Run("readable by the group is kept", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "data")
		if err := os.Mkdir(dir, 0o750); err != nil {
			t.Fatal(err)
		}
		os.Chmod(dir, 0o750)
		if w, err := SecureDir(dir); err != nil || w != "" {
			t.Fatalf("0750 directory: got %q, %v; want it used as it is", w, err)
		}
	})
	t.Run("another user's is refused", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "data")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		chownOrSkip(t, dir)
		if _, err := SecureDir(dir); err == nil || !strings.Contains(err.Error(), "belongs to user") {
			t.Fatalf("another user's directory: got %v, want a refusal naming its owner", err)
		}
	})
	t.Run("a file is refused", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "data")
		os.WriteFile(p, nil, 0o600)
		if _, err := SecureDir(p); err == nil {
			t.Fatal("a file as the data directory: got no error")
		}
	})
}
