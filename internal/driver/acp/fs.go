package acp

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxReadBytes bounds fs/read_text_file: an agent asking for more gets an error.
const maxReadBytes = 16 << 20

// errOutside is what an agent hears when it reaches outside the working directory.
var errOutside = errors.New("path is outside the session's working directory")

// jail confines file access to one directory, symlinks resolved.
type jail struct {
	root string // the working directory with symlinks resolved
}

func newJail(dir string) (jail, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return jail{}, fmt.Errorf("acp: working directory: %w", err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return jail{}, fmt.Errorf("acp: working directory: %w", err)
	}
	return jail{root: real}, nil
}

func (j jail) contains(p string) bool {
	rel, err := filepath.Rel(j.root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// resolve returns the real path of p, which must lie inside the jail once
// every symlink is followed. A file that does not exist yet is resolved
// through its nearest existing ancestor.
func (j jail) resolve(p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("%w: %q is not absolute", errOutside, p)
	}
	p = filepath.Clean(p)
	var rest []string
	cur := p
	for {
		real, err := filepath.EvalSymlinks(cur)
		if err == nil {
			full := filepath.Join(append([]string{real}, rest...)...)
			if !j.contains(full) {
				return "", fmt.Errorf("%w: %s", errOutside, p)
			}
			return full, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		// A dangling symlink must not be written through: it could point anywhere.
		if fi, lerr := os.Lstat(cur); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return "", fmt.Errorf("%w: %s is a dangling symlink", errOutside, cur)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return "", fmt.Errorf("%w: %s", errOutside, p)
		}
		rest = append([]string{filepath.Base(cur)}, rest...)
		cur = parent
	}
}

// read returns the file's text from line (1-based, 0: the start), at most
// limit lines (0: all).
func (j jail) read(p string, line, limit int) (string, error) {
	real, err := j.resolve(p)
	if err != nil {
		return "", err
	}
	f, err := os.Open(real)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if fi.IsDir() {
		return "", fmt.Errorf("%s is a directory", p)
	}
	if line <= 1 && limit <= 0 {
		if fi.Size() > maxReadBytes {
			return "", fmt.Errorf("%s is larger than %d bytes", p, maxReadBytes)
		}
		b, err := os.ReadFile(real)
		return string(b), err
	}
	line = max(line, 1)
	r := bufio.NewReader(f)
	var sb strings.Builder
	for n := 1; ; n++ {
		s, err := r.ReadString('\n')
		if n >= line && (limit <= 0 || n < line+limit) {
			sb.WriteString(s)
			if sb.Len() > maxReadBytes {
				return "", fmt.Errorf("%s: the lines asked for exceed %d bytes", p, maxReadBytes)
			}
		}
		if err != nil || (limit > 0 && n >= line+limit-1) {
			break
		}
	}
	return sb.String(), nil
}

// write writes the file, creating it and its missing parents inside the jail.
func (j jail) write(p, content string) error {
	real, err := j.resolve(p)
	if err != nil {
		return err
	}
	perm := fs.FileMode(0o644)
	if fi, err := os.Stat(real); err == nil {
		if fi.IsDir() {
			return fmt.Errorf("%s is a directory", p)
		}
		perm = fi.Mode().Perm()
	}
	if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
		return err
	}
	return os.WriteFile(real, []byte(content), perm)
}
