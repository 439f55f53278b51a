package gitwork

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// emptyTree is git's empty tree: the base of a repository with no commit yet.
const emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

const (
	// PageBytes is the most of a patch one answer carries.
	PageBytes = 1 << 20
	// A file's patch over largeBytes or largeLines is marked large, for a
	// client to fold it.
	largeBytes = 256 << 10
	largeLines = 5000
	// untrackedJobs bounds the git processes diffing untracked files at once.
	untrackedJobs = 4
)

// File is one changed file of a thread's change.
type File struct {
	Path      string `json:"path"`
	OldPath   string `json:"old_path,omitempty"`
	Status    string `json:"status"` // added, modified, deleted, renamed, copied, typechange, untracked
	Additions int    `json:"additions"`
	Deletions int    `json:"deletions"`
	Binary    bool   `json:"binary"`
	Large     bool   `json:"large"`
}

// Changes is a thread's whole change since its base: the answer of GET
// /api/threads/{id}/changes.
type Changes struct {
	Base     string `json:"base"`
	Head     string `json:"head"`
	Branch   string `json:"branch"`
	Upstream string `json:"upstream"`
	// Dir is the thread's directory from the repository's top ("" at the
	// top): the files' paths are the top's, the Files view's the thread's.
	Dir        string `json:"dir"`
	Ahead      int    `json:"ahead"`
	Behind     int    `json:"behind"`
	Files      []File `json:"files"`
	Patch      string `json:"patch"`
	Offset     int    `json:"offset"`
	NextOffset int    `json:"next_offset"`
	More       bool   `json:"more"`
}

// Query says which change to read: from Base ("" : HEAD), one Path or all,
// the page of the patch from byte Offset of at most PageBytes (0: the
// default).
type Query struct {
	Base      string
	Path      string
	Offset    int
	PageBytes int
}

// Diff reads the change of the working tree holding dir since q.Base: what
// `git diff BASE` prints, then each untracked file (.gitignore respected) as
// `git diff --no-index /dev/null FILE` prints it.
func Diff(ctx context.Context, dir string, q Query) (Changes, error) {
	top, err := Top(ctx, dir)
	if err != nil {
		return Changes{}, err
	}
	var spec []string
	if q.Path != "" {
		p, err := cleanPath(q.Path)
		if err != nil {
			return Changes{}, err
		}
		spec = []string{"--", ":(literal)" + p}
	}
	c := Changes{Head: Head(ctx, top), Branch: branch(ctx, top), Upstream: upstream(ctx, top), Files: []File{}}
	c.Dir = below(top, dir)
	c.Base = q.Base
	if c.Base == "" {
		c.Base = c.Head
	}
	from := c.Base
	if from == "" {
		from = emptyTree
	}
	diff := []string{"diff", "--no-color", "--no-ext-diff"}
	var (
		wg                      sync.WaitGroup
		patch, names, untracked result
		perr, nerr, uerr        error
	)
	wg.Add(3)
	go func() {
		defer wg.Done()
		patch, perr = run(ctx, top, nil, append(append(diff, from), spec...)...)
	}()
	go func() {
		defer wg.Done()
		names, nerr = run(ctx, top, nil, append(append(diff, "--name-status", "-z", from), spec...)...)
	}()
	go func() {
		defer wg.Done()
		untracked, uerr = run(ctx, top, nil, append([]string{"ls-files", "--others", "--exclude-standard", "-z"}, spec...)...)
	}()
	if c.Head != "" {
		c.Ahead, c.Behind = aheadBehind(ctx, top, c.Upstream, c.Base)
	}
	wg.Wait()
	for _, e := range []error{perr, nerr, uerr} {
		if e != nil {
			return Changes{}, e
		}
	}
	for _, r := range []result{patch, names, untracked} {
		if r.code != 0 {
			return Changes{}, errorf(CodeGitFailed, "git diff %s: %s", from, words(r))
		}
	}
	c.Files = tracked(names.out)
	if parts := splitParts(patch.out); len(parts) == len(c.Files) {
		// The counts from the patch itself: a second diff (--numstat) would
		// cost as much again.
		for i, p := range parts {
			c.Files[i] = partStats(c.Files[i], p)
		}
	} else if err := numstat(ctx, top, append(append(diff, "--numstat", "-z", from), spec...), c.Files); err != nil {
		return Changes{}, err
	}
	whole := patch.out
	newFiles, newPatches, err := untrackedDiffs(ctx, top, untracked.out)
	if err != nil {
		return Changes{}, err
	}
	c.Files = append(c.Files, newFiles...)
	for _, p := range newPatches {
		whole = append(whole, p...)
	}
	c.Offset = min(max(q.Offset, 0), len(whole))
	page := q.PageBytes
	if page <= 0 {
		page = PageBytes
	}
	end := pageEnd(whole, c.Offset, page)
	c.Patch, c.NextOffset, c.More = string(whole[c.Offset:end]), end, end < len(whole)
	return c, nil
}

// cleanPath refuses a path that leaves the repository.
func cleanPath(p string) (string, error) {
	c := path.Clean(strings.ReplaceAll(p, "\\", "/"))
	if p == "" || path.IsAbs(c) || c == ".." || strings.HasPrefix(c, "../") || strings.ContainsRune(p, 0) {
		return "", errorf("bad_path", "path %q must be a relative path inside the repository", p)
	}
	return c, nil
}

// pageEnd is where a page from off of at most n bytes ends: after its last
// newline, else (one long line) at a character's boundary.
func pageEnd(b []byte, off, n int) int {
	if len(b)-off <= n {
		return len(b)
	}
	end := off + n
	if i := bytes.LastIndexByte(b[off:end], '\n'); i >= 0 {
		return off + i + 1
	}
	for end > off && !utf8.RuneStart(b[end]) {
		end--
	}
	if end == off {
		end = off + n
	}
	return end
}

// aheadBehind counts commits against the upstream, or against base when the
// branch has none.
func aheadBehind(ctx context.Context, top, upstream, base string) (ahead, behind int) {
	against := upstream
	if against == "" {
		against = base
	}
	if against == "" {
		return 0, 0
	}
	out, err := git(ctx, top, "rev-list", "--left-right", "--count", against+"...HEAD")
	if err != nil {
		return 0, 0
	}
	f := strings.Fields(out)
	if len(f) != 2 {
		return 0, 0
	}
	behind, _ = strconv.Atoi(f[0])
	ahead, _ = strconv.Atoi(f[1])
	return ahead, behind
}

var statusWords = map[byte]string{
	'A': "added", 'M': "modified", 'D': "deleted", 'R': "renamed", 'C': "copied", 'T': "typechange",
}

// tracked reads `--name-status -z`: the files in the patch's order.
func tracked(names []byte) []File {
	files := []File{}
	nf := bytes.Split(bytes.TrimSuffix(names, []byte{0}), []byte{0})
	for i := 0; i+1 < len(nf); {
		st := string(nf[i])
		f := File{Status: statusWords[st[0]]}
		if f.Status == "" {
			f.Status = "modified"
		}
		if st[0] == 'R' || st[0] == 'C' {
			if i+2 >= len(nf) {
				break
			}
			f.OldPath, f.Path = string(nf[i+1]), string(nf[i+2])
			i += 3
		} else {
			f.Path = string(nf[i+1])
			i += 2
		}
		files = append(files, f)
	}
	return files
}

// numstat counts the files' lines with `--numstat -z` (the same files in
// the same order), when their patch could not be cut into one part each.
func numstat(ctx context.Context, top string, args []string, files []File) error {
	r, err := run(ctx, top, nil, args...)
	if err != nil {
		return err
	}
	if r.code != 0 {
		return errorf(CodeGitFailed, "git diff --numstat: %s", words(r))
	}
	cf := bytes.Split(bytes.TrimSuffix(r.out, []byte{0}), []byte{0})
	for i, k := 0, 0; i < len(cf) && k < len(files); k++ {
		fields := strings.SplitN(string(cf[i]), "\t", 3)
		if len(fields) < 3 {
			break
		}
		if fields[0] == "-" {
			files[k].Binary = true
		} else {
			files[k].Additions, _ = strconv.Atoi(fields[0])
			files[k].Deletions, _ = strconv.Atoi(fields[1])
		}
		files[k].Large = files[k].Additions+files[k].Deletions > largeLines
		if fields[2] == "" { // a rename or copy: its two paths follow
			i += 3
		} else {
			i++
		}
	}
	return nil
}

// partStats counts a file's lines from its part of the patch: '+' and '-'
// lines inside hunks; a binary file has none.
func partStats(f File, part []byte) File {
	inHunk := false
	for line := range bytes.Lines(part) {
		switch {
		case !inHunk && (bytes.HasPrefix(line, []byte("Binary files ")) || bytes.HasPrefix(line, []byte("GIT binary patch"))):
			f.Binary = true
		case !inHunk && bytes.HasPrefix(line, []byte("@@")):
			inHunk = true
		case inHunk && len(line) > 0 && line[0] == '+':
			f.Additions++
		case inHunk && len(line) > 0 && line[0] == '-':
			f.Deletions++
		}
	}
	f.Large = f.Additions+f.Deletions > largeLines || len(part) > largeBytes
	return f
}

// splitParts cuts a patch into its files' parts: each begins at a line
// starting "diff --git " (a content line begins with ' ', '+' or '-').
func splitParts(patch []byte) [][]byte {
	var parts [][]byte
	head := []byte("diff --git ")
	start := 0
	for i := 0; i < len(patch); {
		nl := bytes.IndexByte(patch[i:], '\n')
		next := len(patch)
		if nl >= 0 {
			next = i + nl + 1
		}
		if next < len(patch) && bytes.HasPrefix(patch[next:], head) {
			parts = append(parts, patch[start:next])
			start = next
		}
		i = next
	}
	if start < len(patch) {
		parts = append(parts, patch[start:])
	}
	return parts
}

// untrackedDiffs diffs each untracked file against /dev/null, a few at once,
// keeping ls-files' order.
func untrackedDiffs(ctx context.Context, top string, list []byte) ([]File, [][]byte, error) {
	var paths []string
	for _, p := range bytes.Split(list, []byte{0}) {
		if len(p) > 0 && p[len(p)-1] != '/' { // "sub/": a repository inside, not a file
			paths = append(paths, string(p))
		}
	}
	files := make([]File, len(paths))
	patches := make([][]byte, len(paths))
	errs := make([]error, len(paths))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(untrackedJobs, len(paths)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				r, err := run(ctx, top, nil, "diff", "--no-color", "--no-ext-diff", "--no-index", "--", "/dev/null", paths[i])
				switch {
				case err != nil:
					errs[i] = err
				case r.code > 1: // 1: they differ, as a new file does
					errs[i] = errorf(CodeGitFailed, "git diff --no-index %s: %s", paths[i], words(r))
				default:
					patches[i] = r.out
					files[i] = newFileStats(paths[i], r.out)
				}
			}
		}()
	}
	for i := range paths {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, nil, err
		}
	}
	return files, patches, nil
}

// newFileStats counts an untracked file's lines from its patch.
func newFileStats(p string, patch []byte) File {
	return partStats(File{Path: p, Status: "untracked"}, patch)
}

// Comment limits: what a line's comment may carry.
const (
	maxCommentText = 16 << 10
	maxCommentHunk = 16 << 10
)

// CommentText is the message a comment on a line of a thread's change
// becomes: it names path:line, quotes the hunk, then says what the person
// wrote.
func CommentText(p string, line int, hunk, text string) (string, error) {
	clean, err := cleanPath(p)
	if err != nil {
		return "", err
	}
	switch {
	case line < 1:
		return "", errorf("bad_input", "line must be a line number of the file (1 or more), not %d", line)
	case strings.TrimSpace(text) == "":
		return "", errorf("bad_input", "a comment needs text")
	case len(text) > maxCommentText:
		return "", errorf("bad_input", "a comment's text is at most %d bytes", maxCommentText)
	case len(hunk) > maxCommentHunk:
		return "", errorf("bad_input", "a comment's hunk is at most %d bytes", maxCommentHunk)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Comment on `%s:%d`:\n", clean, line)
	if hunk = strings.TrimRight(hunk, "\n"); hunk != "" {
		fence := "```"
		for strings.Contains(hunk, fence) {
			fence += "`"
		}
		fmt.Fprintf(&b, "%sdiff\n%s\n%s\n", fence, hunk, fence)
	}
	b.WriteString(strings.TrimSpace(text))
	return b.String(), nil
}

// AskCommit is the message asking the agent to commit its work.
const AskCommit = "Please commit the changes you made in this thread: review `git status` and `git diff`, " +
	"stage what belongs to the change, and commit it with a clear message (subject line, blank line, a body saying why). " +
	"Do not push."

// below is dir as a slash path from top ("" for top itself or a dir not
// under it), symlinks resolved as git resolves its top.
func below(top, dir string) string {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	rel, err := filepath.Rel(top, dir)
	if err != nil || rel == "." || !filepath.IsLocal(rel) {
		return ""
	}
	return filepath.ToSlash(rel)
}
