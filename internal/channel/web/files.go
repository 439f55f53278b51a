// A thread's directory, read-only: the dashboard's file browser.

package web

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
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/config"
)

const (
	// maxFileText is the largest file shown as text; a larger one is
	// answered with its size and too_large.
	maxFileText = 1 << 20
	// maxFileImage is the largest image served (?raw=1).
	maxFileImage = 10 << 20
	// maxDirEntries bounds one listing; more says there were others.
	maxDirEntries = 2000
)

// fileEntry is one entry of a directory listing.
type fileEntry struct {
	Name string `json:"name"`
	Kind string `json:"kind"` // "dir", "file" or "link" (a symbolic link, opened only when it stays inside)
	Size int64  `json:"size"`
}

// fileView is the answer of GET /api/threads/{id}/files.
type fileView struct {
	Path    string      `json:"path"` // relative to the thread's directory, "" for itself
	Kind    string      `json:"kind"` // "dir" or "file"
	Entries []fileEntry `json:"entries,omitempty"`
	More    bool        `json:"more,omitempty"` // the listing stopped at maxDirEntries
	Size    int64       `json:"size,omitempty"`
	Text    *string     `json:"text,omitempty"`      // a text file's content
	Binary  bool        `json:"binary,omitempty"`    // not text: not shown
	Image   string      `json:"image,omitempty"`     // an image's content type: ?raw=1 serves it
	TooBig  bool        `json:"too_large,omitempty"` // larger than Limit: not shown
	Limit   int64       `json:"limit,omitempty"`
}

// handleFiles answers ?path=P (relative to the thread's directory; "" for
// the directory itself): a directory's entries, or a file's text. Nothing
// outside the thread's directory is read: the path is resolved, symbolic
// links included, and refused when it leaves. Files git ignores (and .git)
// are hidden unless ?all=1. ?raw=1 serves an image with its content type.
func (s *Server) handleFiles(w http.ResponseWriter, r *http.Request) {
	id := chat.ThreadID(r.PathValue("id"))
	if cluster.NodeOf(id) != "" {
		httpError(w, http.StatusNotFound, "the files of a thread on another machine stay on that machine")
		return
	}
	th, err := s.store.Thread(r.Context(), id)
	if err != nil {
		writeErr(w, err)
		return
	}
	base, err := config.Confine(th.Cwd, s.opt.Roots)
	if err != nil {
		writeErr(w, err)
		return
	}
	q := r.URL.Query()
	all := q.Get("all") == "1"
	rel, real, err := resolveInside(base, q.Get("path"))
	if err != nil {
		writeErr(w, err)
		return
	}
	if !all && slices.Contains(strings.Split(rel, "/"), ".git") {
		httpError(w, http.StatusNotFound, fmt.Sprintf("%s is inside .git (hidden unless all=1)", rel))
		return
	}
	if !all && rel != "" {
		hidden, err := ignored(r.Context(), base, []string{rel})
		if err != nil {
			writeErr(w, err)
			return
		}
		if len(hidden) > 0 {
			httpError(w, http.StatusNotFound, fmt.Sprintf("%s is ignored by git (hidden unless all=1)", rel))
			return
		}
	}
	st, err := os.Stat(real)
	if err != nil {
		httpError(w, http.StatusNotFound, fmt.Sprintf("%s: no such file or directory", rel))
		return
	}
	if st.IsDir() {
		v, err := listDir(r.Context(), base, rel, real, all)
		if err != nil {
			writeErr(w, err)
			return
		}
		writeJSON(w, http.StatusOK, v)
		return
	}
	if !st.Mode().IsRegular() {
		httpError(w, http.StatusBadRequest, fmt.Sprintf("%s is not a regular file", rel))
		return
	}
	if q.Get("raw") == "1" {
		serveImage(w, rel, real, st.Size())
		return
	}
	writeJSON(w, http.StatusOK, readFileView(rel, real, st.Size()))
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
		real = joined // said "no such file" below, if it stays inside
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
func listDir(ctx context.Context, base, rel, real string, all bool) (fileView, error) {
	des, err := os.ReadDir(real)
	if err != nil {
		return fileView{}, fmt.Errorf("%s: %w", rel, err)
	}
	v := fileView{Path: rel, Kind: "dir", Entries: []fileEntry{}}
	var paths []string
	for _, de := range des {
		if !all && de.Name() == ".git" {
			continue
		}
		e := fileEntry{Name: de.Name(), Kind: "file"}
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
			return fileView{}, err
		}
		v.Entries = slices.DeleteFunc(v.Entries, func(e fileEntry) bool {
			return hidden[filepath.ToSlash(filepath.Join(rel, e.Name))]
		})
	}
	slices.SortFunc(v.Entries, func(a, b fileEntry) int {
		if (a.Kind == "dir") != (b.Kind == "dir") {
			if a.Kind == "dir" {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	if len(v.Entries) > maxDirEntries {
		v.Entries, v.More = v.Entries[:maxDirEntries], true
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

// readFileView reads a file for the browser: text when it is UTF-8 without
// NUL bytes and at most maxFileText; else only what it is.
func readFileView(rel, real string, size int64) fileView {
	v := fileView{Path: rel, Kind: "file", Size: size}
	head, err := readHead(real, maxFileText+1)
	if err != nil {
		v.Binary = true
		return v
	}
	if ct := http.DetectContentType(head); strings.HasPrefix(ct, "image/") {
		v.Image = ct
		if size > maxFileImage {
			v.TooBig, v.Limit = true, maxFileImage
		}
		return v
	}
	if size > maxFileText || len(head) > maxFileText {
		v.TooBig, v.Limit = true, maxFileText
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

// serveImage serves an image file's bytes with its sniffed content type, in
// a sandbox (as uploads are); anything else is refused.
func serveImage(w http.ResponseWriter, rel, real string, size int64) {
	if size > maxFileImage {
		httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("%s is too large to show (%d bytes, at most %d)", rel, size, maxFileImage))
		return
	}
	data, err := readHead(real, maxFileImage)
	if err != nil {
		httpError(w, http.StatusNotFound, fmt.Sprintf("%s: %v", rel, err))
		return
	}
	ct := http.DetectContentType(data)
	if !strings.HasPrefix(ct, "image/") {
		httpError(w, http.StatusUnsupportedMediaType, fmt.Sprintf("%s is not an image: raw=1 serves images only", rel))
		return
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; sandbox")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(data)
}
