package sqlite

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/store"
)

// The database and its -wal and -shm files are 0600 whatever the umask, and
// files an older parley left readable by others are narrowed. Real files.
func TestDatabaseFilesAreOwnerOnly(t *testing.T) {
	t.Parallel()
	old := syscall.Umask(0) // the most permissive umask there is
	defer syscall.Umask(old)

	check := func(t *testing.T, path string) {
		t.Helper()
		s := open(t, path)
		th := chat.Thread{ID: "t1", Agent: "a", Cwd: "/", State: chat.ThreadIdle, CreatedAt: time.Now(), UpdatedAt: time.Now()}
		if err := s.Commit(t.Context(), store.Batch{Thread: &th}); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			st, err := os.Stat(p)
			if err != nil {
				t.Fatalf("%s: %v (a write in WAL mode makes it)", filepath.Base(p), err)
			}
			if got := st.Mode().Perm(); got != 0o600 {
				t.Errorf("%s: mode %v, want 0600", filepath.Base(p), got)
			}
		}
	}
	t.Run("new", func(t *testing.T) { check(t, filepath.Join(t.TempDir(), "parley.db")) })
	t.Run("left readable by an older parley", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "parley.db")
		s := open(t, path)
		s.Close()
		for _, p := range []string{path + "-wal", path + "-shm"} { // gone at close: empty ones are valid
			if err := os.WriteFile(p, nil, 0o666); err != nil {
				t.Fatal(err)
			}
		}
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			if err := os.Chmod(p, 0o666); err != nil {
				t.Fatal(err)
			}
		}
		check(t, path)
	})
}
