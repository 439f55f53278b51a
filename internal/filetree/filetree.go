// Package filetree reads a thread's directory for the dashboard's read-only
// file browser: a directory's entries or a file's text, never anything
// outside the directory, what git ignores hidden unless asked. The web
// handler uses it for this machine's threads; a cluster node uses it to
// answer the hub for its own.
package filetree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/chat"
)

const (
	// MaxText is the largest file shown as text; a larger one is answered
	// with its size and too_large.
	MaxText = 1 << 20
	// MaxImage is the largest image served raw.
	MaxImage = 10 << 20
	// MaxDirEntries bounds one listing; more says there were others.
	MaxDirEntries = 2000
)

// Entry is one entry of a directory listing.
type Entry struct {
	Name string `json:"name"`
	Kind string `json:"kind"` // "dir", "file" or "link" (a symbolic link, opened only when it stays inside)
	Size int64  `json:"size"`
}

// View is a directory's listing or a file's content (GET /api/threads/{id}/files).
type View struct {
	Path    string  `json:"path"` // relative to the thread's directory, "" for itself
	Kind    string  `json:"kind"` // "dir" or "file"
	Entries []Entry `json:"entries,omitempty"`
	More    bool    `json:"more,omitempty"` // the listing stopped at MaxDirEntries
	Size    int64   `json:"size,omitempty"`
	Text    *string `json:"text,omitempty"`      // a text file's content
	Binary  bool    `json:"binary,omitempty"`    // not text: not shown
	Image   string  `json:"image,omitempty"`     // an image's content type: raw serves it
	TooBig  bool    `json:"too_large,omitempty"` // larger than Limit: not shown
	Limit   int64   `json:"limit,omitempty"`
}

// Query names what to read: Path relative to the directory ("" for itself);
// All shows what git ignores (and .git).
type Query struct {
	Path string `json:"path,omitempty"`
	All  bool   `json:"all,omitempty"`
}

// Read answers q inside base (a directory already resolved and confined to
// the roots): a directory's entries, or a file's text.
func Read(ctx context.Context, base string, q Query) (View, error) {
	rel, real, st, err := open(ctx, base, q)
	if err != nil {
		return View{}, err
	}
	if st.IsDir() {
		return listDir(ctx, base, rel, real, q.All)
	}
	return readFile(rel, real, st.Size()), nil
}

// Raw is q's file's bytes, at most limit (else a chat.ErrTooLarge); the
// caller serves only what it finds to be an image.
func Raw(ctx context.Context, base string, q Query, limit int64) ([]byte, error) {
	rel, real, st, err := open(ctx, base, q)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%w: %s is a directory", chat.ErrBadInput, rel)
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%w: %s is too large to show (%d bytes, at most %d)", chat.ErrTooLarge, rel, st.Size(), limit)
	}
	data, err := readHead(real, limit)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", chat.ErrNotFound, rel, err)
	}
	return data, nil
}

// notFound is a path that is not there or is hidden: a chat.ErrNotFound
// with only its own words.
type notFound struct{ msg string }

func (e notFound) Error() string        { return e.msg }
func (e notFound) Is(target error) bool { return target == chat.ErrNotFound }

// open resolves q inside base and refuses what it must not show: a path
// outside, what git ignores (unless All), anything not a directory or a
// regular file.
func open(ctx context.Context, base string, q Query) (rel, real string, st os.FileInfo, err error) {
	rel, real, err = resolveInside(base, q.Path)
	if err != nil {
		return "", "", nil, err
	}
	if !q.All && slices.Contains(strings.Split(rel, "/"), ".git") {
		return "", "", nil, notFound{fmt.Sprintf("%s is inside .git (hidden unless all=1)", rel)}
	}
	if !q.All && rel != "" {
		hidden, err := ignored(ctx, base, []string{rel})
		if err != nil {
			return "", "", nil, err
		}
		if len(hidden) > 0 {
			return "", "", nil, notFound{fmt.Sprintf("%s is ignored by git (hidden unless all=1)", rel)}
		}
	}
	st, err = os.Stat(real)
	if err != nil {
		return "", "", nil, notFound{fmt.Sprintf("%s: no such file or directory", rel)}
	}
	if !st.IsDir() && !st.Mode().IsRegular() {
		return "", "", nil, fmt.Errorf("%w: %s is not a regular file", chat.ErrBadInput, rel)
	}
	return rel, real, st, nil
}

// errOutside is a path that leaves the thread's directory: a chat.ErrOutsideRoot (403).
type errOutside struct{ msg string }

func (e errOutside) Error() string        { return e.msg }
func (e errOutside) Is(target error) bool { return target == chat.ErrOutsideRoot }

// resolveInside resolves p (relative to base, which is already resolved)
// with its symbolic links and returns it relative to base and real, or an
// errOutside when it is absolute or lands outside base.
func resolveInside(base, p string) (rel, real string, err error) {
	if strings.ContainsRune(p, 0) {
		return "", "", fmt.Errorf("path holds a NUL byte: %w", chat.ErrBadInput)
	}
	if filepath.IsAbs(p) {
		return "", "", errOutside{fmt.Sprintf("path %q is absolute: give it relative to the thread's directory", p)}
	}
	joined := filepath.Join(base, p)
	real, err = filepath.EvalSymlinks(joined)
	if errors.Is(err, fs.ErrNotExist) {
		real = joined // said "no such file" by open, if it stays inside
	} else if err != nil {
		return "", "", fmt.Errorf("path %q: %w", p, err)
	}
	rel, err = filepath.Rel(base, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", "", errOutside{fmt.Sprintf("path %q is outside the thread's directory", p)}
	}
	if rel == "." {
		rel = ""
	}
	return filepath.ToSlash(rel), real, nil
}

// listDir lists the directory real (rel inside base): directories first,
// then by name; what git ignores (and .git) left out unless all.
func listDir(ctx context.Context, base, rel, real string, all bool) (View, error) {
	des, err := os.ReadDir(real)
	if err != nil {
		return View{}, fmt.Errorf("%s: %w", rel, err)
	}
	v := View{Path: rel, Kind: "dir", Entries: []Entry{}}
	var paths []string
	for _, de := range des {
		if !all && de.Name() == ".git" {
			continue
		}
		e := Entry{Name: de.Name(), Kind: "file"}
		switch {
		case de.Type()&fs.ModeSymlink != 0:
			e.Kind = "link"
		case de.IsDir():
			e.Kind = "dir"
		}
		if info, err := de.Info(); err == nil && e.Kind == "file" {
			e.Size = info.Size()
		}
		v.Entries = append(v.Entries, e)
		paths = append(paths, filepath.ToSlash(filepath.Join(rel, de.Name())))
	}
	if !all && len(paths) > 0 {
		hidden, err := ignored(ctx, base, paths)
		if err != nil {
			return View{}, err
		}
		v.Entries = slices.DeleteFunc(v.Entries, func(e Entry) bool {
			return hidden[filepath.ToSlash(filepath.Join(rel, e.Name))]
		})
	}
	slices.SortFunc(v.Entries, func(a, b Entry) int {
		if (a.Kind == "dir") != (b.Kind == "dir") {
			if a.Kind == "dir" {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	if len(v.Entries) > MaxDirEntries {
		v.Entries, v.More = v.Entries[:MaxDirEntries], true
	}
	return v, nil
}

// ignored returns which of paths (relative to dir) git ignores, asked of
// `git check-ignore` as argv with the paths on its standard input. Outside a
// git repository nothing is ignored.
func ignored(ctx context.Context, dir string, paths []string) (map[string]bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "-C", dir, "check-ignore", "-z", "--stdin")
	cmd.Stdin = strings.NewReader(strings.Join(paths, "\x00") + "\x00")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && exit.ExitCode() == 1: // none is ignored
		return nil, nil
	case errors.As(err, &exit) && strings.Contains(errb.String(), "not a git repository"):
		return nil, nil
	case errors.Is(err, exec.ErrNotFound):
		return nil, nil // no git: no .gitignore to respect
	default:
		return nil, fmt.Errorf("git check-ignore: %v: %s", err, strings.TrimSpace(errb.String()))
	}
	hidden := map[string]bool{}
	for p := range strings.SplitSeq(strings.TrimSuffix(out.String(), "\x00"), "\x00") {
		hidden[p] = true
	}
	return hidden, nil
}

// readFile reads a file for the browser: text when it is UTF-8 without
// NUL bytes and at most MaxText; else only what it is.
func readFile(rel, real string, size int64) View {
	v := View{Path: rel, Kind: "file", Size: size}
	head, err := readHead(real, MaxText+1)
	if err != nil {
		v.Binary = true
		return v
	}
	if ct := http.DetectContentType(head); strings.HasPrefix(ct, "image/") {
		v.Image = ct
		if size > MaxImage {
			v.TooBig, v.Limit = true, MaxImage
		}
		return v
	}
	if size > MaxText || len(head) > MaxText {
		v.TooBig, v.Limit = true, MaxText
		return v
	}
	if bytes.IndexByte(head, 0) >= 0 || !utf8.Valid(head) {
		v.Binary = true
		return v
	}
	text := string(head)
	v.Text = &text
	return v
}

func readHead(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}
