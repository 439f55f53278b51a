package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
)

// fileMode is the mode of the database and its -wal and -shm files: they hold
// every conversation, so only parley's user may read them.
const fileMode = 0o600

// ownFiles makes the database file 0600 before SQLite opens it, whatever the
// umask (SQLite gives -wal and -shm the mode of the database file), and narrows
// a database, -wal or -shm left readable by others by an older parley, saying so.
func ownFiles(path string, log *slog.Logger) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, fileMode)
	if err != nil {
		return fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	f.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		st, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("sqlite: %s: %w", p, err)
		}
		if st.Mode().Perm() == fileMode {
			continue
		}
		if err := os.Chmod(p, fileMode); err != nil {
			return fmt.Errorf("sqlite: %s has mode %v and could not be made 0600: %w", p, st.Mode().Perm(), err)
		}
		if st.Mode().Perm()&^fileMode != 0 {
			log.Warn("a database file was readable by others; made it 0600", "file", p, "mode", st.Mode().Perm().String())
		}
	}
	return nil
}
