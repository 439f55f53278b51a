package gitwork

import (
	"context"
	"os"
	"path/filepath"
	"strings"
)

// Worktree is a thread's own worktree.
type Worktree struct {
	Dir    string // the worktree's top
	Cwd    string // where the thread runs: Dir, at the place below the top that was asked for
	Branch string // parley/<short-title>-<id>
}

// AddWorktree makes a worktree for a thread on a new branch
// parley/<short-title>-<id> from dir's HEAD, under root (default
// <repo>/../<repo>.parley-worktrees), named <short-title>-<id>.
func AddWorktree(ctx context.Context, dir, root, title, id string) (Worktree, error) {
	top, err := Top(ctx, dir)
	if err != nil {
		return Worktree{}, err
	}
	if Head(ctx, top) == "" {
		return Worktree{}, errorf(CodeGitFailed, "the repository at %s has no commit yet: a worktree starts from one", top)
	}
	if root == "" {
		root = filepath.Join(filepath.Dir(top), filepath.Base(top)+".parley-worktrees")
	}
	name := Slug(title)
	if name == "" {
		name = "thread"
	}
	name += "-" + shortID(id)
	w := Worktree{Dir: filepath.Join(root, name), Branch: "parley/" + name}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return Worktree{}, errorf(CodeGitFailed, "the worktrees' folder: %v", err)
	}
	if _, err := git(ctx, top, "worktree", "add", "-q", "-b", w.Branch, w.Dir, "HEAD"); err != nil {
		return Worktree{}, err
	}
	w.Cwd = w.Dir
	if rel, err := filepath.Rel(top, mustReal(dir)); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
		w.Cwd = filepath.Join(w.Dir, rel)
	}
	return w, nil
}

// mustReal is dir with its links resolved (git's toplevel is), else dir.
func mustReal(dir string) string {
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		return r
	}
	return dir
}

// Dirty says whether a worktree holds changes HEAD does not: modified,
// staged or untracked files (ignored ones do not count).
func Dirty(ctx context.Context, dir string) (bool, error) {
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		return false, nil // removed already: nothing in it to lose
	}
	out, err := git(ctx, dir, "status", "--porcelain", "--untracked-files=normal")
	if err != nil {
		return false, err
	}
	return out != "", nil
}

// RemoveWorktree removes a thread's worktree (its branch stays). One with
// uncommitted changes is removed only with force; else a worktree_dirty
// error and nothing is removed.
func RemoveWorktree(ctx context.Context, dir string, force bool) error {
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		return nil // removed already
	}
	dirty, err := Dirty(ctx, dir)
	if err != nil {
		return err
	}
	if dirty && !force {
		return errorf(CodeWorktreeDirty, "the worktree %s has uncommitted changes: commit them, or remove it anyway (force)", dir)
	}
	args := []string{"worktree", "remove"}
	if force {
		args = append(args, "--force")
	}
	_, err = git(ctx, dir, append(args, dir)...)
	return err
}

// Slug is a thread's short title for a branch and folder name: its first
// words, lower case, a-z0-9 and dashes, at most 32 characters.
func Slug(title string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(title) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		default:
			dash = true
		}
	}
	s := b.String()
	if len(s) > 32 {
		s = s[:32]
	}
	return strings.Trim(s, "-")
}

// shortID is the part of a thread's id that names its worktree: its first 8
// characters after the kind's prefix.
func shortID(id string) string {
	id = strings.TrimPrefix(id, "t_")
	id = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, id)
	if len(id) > 8 {
		id = id[:8]
	}
	return strings.ToLower(id)
}
