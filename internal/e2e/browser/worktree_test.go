//go:build e2e

package browser

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/parleyhq/parley/internal/testkit"
)

// The new-thread form's "Own worktree" starts the thread in a git worktree
// of its own on a parley/… branch, beside the repository; deleting the
// thread offers to remove that worktree, and one with uncommitted changes
// is removed only after a second confirmation naming what would be lost.
func TestNewThreadInItsOwnWorktreeAndDelete(t *testing.T) {
	r := newRig(t)
	repo := filepath.Join(r.work, "proj")
	gitIn(t, repo, "init", "-q", "-b", "main")
	gitIn(t, repo, "config", "user.name", "t")
	gitIn(t, repo, "config", "user.email", "t@example.com")
	if err := os.WriteFile(filepath.Join(repo, "README"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, repo, "add", "-A")
	gitIn(t, repo, "commit", "-q", "-m", "start")

	ctx := browser(t, 1280, 860)
	run(t, ctx, "sign in", chromedp.Navigate(r.LoginURL()))
	run(t, ctx, "open the new-thread form", chromedp.WaitVisible(chromedp.CSS(`form.newthread textarea`)))
	until(t, ctx, "the working directory is filled in", `document.querySelector("form.newthread input[type=text]").value !== ""`)
	run(t, ctx, "the repository as the folder, in its own worktree",
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const el = document.querySelector("form.newthread input[type=text]");
			el.value = %s; el.dispatchEvent(new Event("input", { bubbles: true })); })()`, js(repo))),
		click(chromedp.CSS(`form.newthread input[name=worktree]`)),
		chromedp.SendKeys(chromedp.CSS(`form.newthread textarea`), PromptEcho),
		click(chromedp.CSS(`form.newthread button[type=submit]`)))
	until(t, ctx, "the chat opens", `location.hash.startsWith("#/c/") && !!document.querySelector("textarea[aria-label=Message]")`)

	var threads struct {
		Threads []struct {
			ID, Cwd, Worktree string
		} `json:"threads"`
	}
	var th struct{ ID, Cwd, Worktree string }
	testkit.Eventually(t, wait, func() bool {
		r.rest(t, "GET", "/api/threads", nil, &threads)
		for _, x := range threads.Threads {
			th = struct{ ID, Cwd, Worktree string }{x.ID, x.Cwd, x.Worktree}
		}
		return th.ID != ""
	}, "the new thread is listed")
	wantTree := filepath.Join(r.work, "proj.parley-worktrees")
	if th.Worktree == "" || !strings.HasPrefix(th.Worktree, wantTree+string(filepath.Separator)) || th.Cwd != th.Worktree {
		t.Fatalf("thread %+v: want it working in its own worktree under %s", th, wantTree)
	}
	if b := gitIn(t, th.Worktree, "rev-parse", "--abbrev-ref", "HEAD"); !strings.HasPrefix(b, "parley/") {
		t.Fatalf("the worktree's branch is %q, want parley/…", b)
	}
	// Work nobody committed: the delete must not lose it unasked.
	if err := os.WriteFile(filepath.Join(th.Worktree, "draft.txt"), []byte("unsaved\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	run(t, ctx, "delete, its worktree too", click(chromedp.CSS(`[data-action=delete]`)))
	until(t, ctx, "the delete offers the worktree", `!!document.querySelector("[data-confirm-delete] input[data-remove-worktree]")`)
	run(t, ctx, "tick it and delete", click(chromedp.CSS(`[data-confirm-delete] input[data-remove-worktree]`)), click(chromedp.CSS(`[data-confirm=delete]`)))
	until(t, ctx, "asked again: uncommitted changes", `!!document.querySelector("[data-worktree-dirty]") && document.querySelector("[data-confirm=delete]").textContent.includes("with its changes")`)
	if _, err := os.Stat(filepath.Join(th.Worktree, "draft.txt")); err != nil {
		t.Fatalf("the worktree's changes went before the second confirmation: %v", err)
	}
	r.rest(t, "GET", "/api/threads", nil, &threads)
	if len(threads.Threads) != 1 {
		t.Fatalf("the thread went before the second confirmation: %+v", threads.Threads)
	}
	if bad := eval[[]string](t, ctx, unnamedControls("[data-confirm-delete], form.newthread")); len(bad) > 0 {
		t.Fatalf("controls without a name: %v", bad)
	}
	run(t, ctx, "delete with its changes", click(chromedp.CSS(`[data-confirm=delete]`)))
	until(t, ctx, "back home", `!location.hash.startsWith("#/c/")`)
	if _, err := os.Stat(th.Worktree); !os.IsNotExist(err) {
		t.Fatalf("the worktree is still there: %v", err)
	}
	r.rest(t, "GET", "/api/threads", nil, &threads)
	if len(threads.Threads) != 0 {
		t.Fatalf("the thread is still there: %+v", threads.Threads)
	}
}
