package router

import (
	"context"
	"fmt"
	"strings"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/gitwork"
)

// gitWish is what a new thread asks of its repository: a worktree of its
// own, named after title (the first message).
type gitWish struct {
	worktree bool
	title    string
}

// gitStart records the base of a new thread in a git repository (the commit
// HEAD names now: its change is counted from it) and, when wished, makes its
// worktree and moves the thread into it. A thread outside git has no base;
// a worktree wished for outside git, or outside the agent's roots, is an
// error and no thread is made.
func (r *Router) gitStart(ctx context.Context, th *chat.Thread, a config.Agent, wish gitWish) error {
	if !wish.worktree {
		th.GitBase = gitwork.Head(ctx, th.Cwd)
		return nil
	}
	if _, err := gitwork.Top(ctx, th.Cwd); err != nil {
		return invalid("a worktree of its own: %v", err)
	}
	w, err := gitwork.AddWorktree(ctx, th.Cwd, r.opt.Worktrees, firstLine(wish.title), string(th.ID))
	if err != nil {
		return invalid("a worktree of its own: %v", err)
	}
	cwd, err := config.Confine(w.Cwd, a.Roots)
	if err != nil {
		_ = gitwork.RemoveWorktree(context.WithoutCancel(ctx), w.Dir, true)
		return fmt.Errorf("a worktree of its own at %s: %w (set [git] worktrees to a folder inside one)", w.Dir, err)
	}
	th.Cwd, th.Worktree, th.GitBase = cwd, w.Dir, gitwork.Head(ctx, w.Dir)
	return nil
}

// gitUndo removes the worktree made for a thread that was not stored.
func (r *Router) gitUndo(th chat.Thread) {
	if th.Worktree != "" {
		if err := gitwork.RemoveWorktree(context.Background(), th.Worktree, true); err != nil {
			r.log.Warn("a new thread's worktree was not removed", "dir", th.Worktree, "err", err)
		}
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// DeleteOptions say what a delete does with the thread's worktree.
type DeleteOptions struct {
	RemoveWorktree bool // remove the worktree parley made for it (its branch stays)
	Force          bool // even with uncommitted changes
}

// worktreeToRemove is th's worktree, checked before anything is deleted: one
// with uncommitted changes is refused without force.
func worktreeToRemove(ctx context.Context, th chat.Thread, force bool) (string, error) {
	if th.Worktree == "" {
		return "", invalid("thread %s has no worktree of its own", th.ID)
	}
	if force {
		return th.Worktree, nil
	}
	dirty, err := gitwork.Dirty(ctx, th.Worktree)
	if err != nil && gitwork.CodeOf(err) != gitwork.CodeNotRepo {
		return "", err
	}
	if dirty {
		return "", &gitwork.Error{Code: gitwork.CodeWorktreeDirty, Message: fmt.Sprintf(
			"the worktree %s has uncommitted changes: nothing was deleted; commit them, or delete again removing it anyway (force)", th.Worktree)}
	}
	return th.Worktree, nil
}

// removeWorktree removes a deleted thread's worktree; when it cannot (the
// agent changed it after the check), the error says the thread is gone and
// the worktree stays.
func removeWorktree(ctx context.Context, id chat.ThreadID, dir string, force bool) error {
	if err := gitwork.RemoveWorktree(ctx, dir, force); err != nil {
		return &gitwork.Error{Code: gitwork.CodeOf(err), Message: fmt.Sprintf(
			"thread %s was deleted, but its worktree %s stays: %v", id, dir, err)}
	}
	return nil
}
