//go:build e2e

package browser

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// gitIn runs git in dir (as argv) and returns its output, failing the test on an error.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// The real Claude Code edits a file of a repository; the thread's Changes
// tab shows the branch and the file with +1 −1, its diff highlighted; a
// comment on the changed line goes to the agent as a message with its
// receipt; Commit commits with the message typed, a second Commit says
// there is nothing to commit, Push pushes to the bare remote. The phone
// shows the same tab inside its screen. Every control is named.
func TestChangesTabCommentCommitPush(t *testing.T) {
	r := newRig(t)
	remote := filepath.Join(r.dir, "remote.git")
	gitIn(t, r.dir, "init", "-q", "--bare", "-b", "main", remote)
	gitIn(t, r.work, "init", "-q", "-b", "main")
	gitIn(t, r.work, "config", "user.name", "t")
	gitIn(t, r.work, "config", "user.email", "t@example.com")
	if err := os.WriteFile(filepath.Join(r.work, GreetFile), []byte("package main\n\nfunc greet() string {\n\treturn \"hello\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, r.work, "add", "-A")
	gitIn(t, r.work, "commit", "-q", "-m", "start")
	gitIn(t, r.work, "remote", "add", "origin", remote)
	gitIn(t, r.work, "push", "-q", "-u", "origin", "main")

	ctx := browser(t, 1280, 860)
	run(t, ctx, "sign in", chromedp.Navigate(r.LoginURL()))
	startThread(t, ctx, PromptEdit)
	until(t, ctx, "the edit asks permission", `!!document.querySelector(".card.perm[data-state=open] button.k-allow_once:enabled")`)
	run(t, ctx, "allow once", click(chromedp.CSS(`.card.perm[data-state=open] button.k-allow_once`)))
	until(t, ctx, "the edit is done", pageHas("Edited."))

	run(t, ctx, "open Changes", click(chromedp.CSS(`.thread-tabs [data-tab=changes]`)))
	until(t, ctx, "the branch and the file with +1 −1", fmt.Sprintf(`(() => { const f = document.querySelector('[data-changed=%s]');
		return !!document.querySelector('[data-branch=main]') && !!f && f.textContent.includes("+1") && f.textContent.includes("−1"); })()`, js(GreetFile)))
	added := `[data-diff="` + GreetFile + `"] .d-add`
	until(t, ctx, "the diff shows the new line, highlighted", `(() => { const l = document.querySelector('`+added+`');
		return !!l && l.textContent.includes('return "hello, world"') && !!l.querySelector(".hljs-string") && l.dataset.new === "4"; })()`)
	shot(t, ctx, "desktop-changes")

	const comment = "make it a constant"
	run(t, ctx, "comment on the added line", click(chromedp.CSS(added+` button.comment-at`)))
	run(t, ctx, "write the comment", chromedp.SendKeys(chromedp.CSS(`[data-comment-box="`+GreetFile+`:4"] textarea`), comment),
		click(chromedp.CSS(`[data-comment-box="`+GreetFile+`:4"] button[type=submit]`)))
	until(t, ctx, "the comment is sent", `!!document.querySelector('[data-comment-sent]')`)
	run(t, ctx, "back to the chat", click(chromedp.CSS(`.thread-tabs [data-tab=chat]`)))
	until(t, ctx, "the comment is a message naming the line, with its receipt", fmt.Sprintf(`[...document.querySelectorAll(".msg.user")].some(m => m.innerText.includes(%s) && m.innerText.includes(%s) && !!m.querySelector("[data-receipt=submitted]"))`,
		js(GreetFile+":4"), js(comment)))

	run(t, ctx, "back to Changes", click(chromedp.CSS(`.thread-tabs [data-tab=changes]`)))
	run(t, ctx, "commit", chromedp.WaitVisible(chromedp.CSS(`input[aria-label="Commit message"]`)),
		chromedp.SendKeys(chromedp.CSS(`input[aria-label="Commit message"]`), "greet the world"),
		click(chromedp.CSS(`.ship button[type=submit]`)))
	until(t, ctx, "the commit is said", `((document.querySelector('[data-ship-result=ok]')||{}).textContent||"").includes("Committed")`)
	if got := gitIn(t, r.work, "log", "-1", "--format=%s"); got != "greet the world" {
		t.Errorf("the newest commit says %q, want the message typed", got)
	}
	run(t, ctx, "commit again", chromedp.SendKeys(chromedp.CSS(`input[aria-label="Commit message"]`), "again"), click(chromedp.CSS(`.ship button[type=submit]`)))
	until(t, ctx, "nothing to commit, said as an error", `!!document.querySelector('[data-ship-result=error][role=alert]')`)
	run(t, ctx, "push", click(chromedp.CSS(`.ship button:nth-of-type(3)`)))
	until(t, ctx, "the push is said", `((document.querySelector('[data-ship-result=ok]')||{}).textContent||"").includes("Pushed")`)
	if local, pushed := gitIn(t, r.work, "rev-parse", "HEAD"), gitIn(t, remote, "rev-parse", "main"); local != pushed {
		t.Errorf("the remote's main is %s, want the commit %s", pushed, local)
	}
	if bad := eval[[]string](t, ctx, unnamedControls(".thread-tabs, .review")); len(bad) > 0 {
		t.Errorf("controls without a name: %v", bad)
	}

	chat := strings.TrimPrefix(strings.SplitN(eval[string](t, ctx, `location.hash`), "?", 2)[0], "#/c/")
	phone := browser(t, 390, 844)
	run(t, phone, "open Changes on the phone", chromedp.Navigate(r.LoginURL()+"#/c/"+chat+"?tab=changes"))
	until(t, phone, "the phone shows the buttons and the branch inside its screen", `(() => { const w = document.documentElement.clientWidth;
		const b = [...document.querySelectorAll('.ship button')];
		return !!document.querySelector('[data-branch=main]') && b.length === 4 && b.every(e => e.getBoundingClientRect().right <= w) && document.documentElement.scrollWidth <= w; })()`)
	shot(t, phone, "phone-changes")
}
