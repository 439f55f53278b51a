//go:build e2e

package browser

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// At the hub's dashboard a thread of machine b reads and ships on b: the
// Files tab lists b's folder and shows b's file, the Changes tab commits
// into b's repository and pushes b's branch to b's remote, each said as on
// b's own dashboard; the phone shows b's files inside its screen.
func TestTheHubsDashboardShipsANodesThread(t *testing.T) {
	hub, b := hubAndNode(t)
	remote := filepath.Join(b.dir, "remote.git")
	gitIn(t, b.dir, "init", "-q", "--bare", "-b", "main", remote)
	gitIn(t, b.work, "init", "-q", "-b", "main")
	gitIn(t, b.work, "config", "user.name", "t")
	gitIn(t, b.work, "config", "user.email", "t@example.com")
	if err := os.WriteFile(filepath.Join(b.work, "a.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, b.work, "add", "-A")
	gitIn(t, b.work, "commit", "-q", "-m", "start")
	gitIn(t, b.work, "remote", "add", "origin", remote)
	gitIn(t, b.work, "push", "-q", "-u", "origin", "main")

	ctx := browser(t, 1280, 900)
	run(t, ctx, "log in at the hub", chromedp.Navigate(hub.LoginURL()+"#/new"), chromedp.WaitVisible(chromedp.CSS(`form.newthread select[name=machine]`)))
	until(t, ctx, "machine b offered", `[...document.querySelectorAll("form.newthread select[name=machine] option")].some(o => o.value === "b")`)
	run(t, ctx, "pick machine b", chromedp.SetValue(chromedp.CSS(`form.newthread select[name=machine]`), "b"))
	until(t, ctx, "b's folder", `document.querySelector("form.newthread input[type=text]").value === `+js(b.work))
	run(t, ctx, "start the thread on b", chromedp.SendKeys(chromedp.CSS(`form.newthread textarea`), PromptEcho),
		click(chromedp.CSS(`form.newthread button[type=submit]`)))
	until(t, ctx, "the reply from b's agent", pageHas("You said it."))

	if err := os.WriteFile(filepath.Join(b.work, "a.txt"), []byte("one\ntwo on b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "open Files", click(chromedp.CSS(`.thread-tabs [data-tab=files]`)))
	until(t, ctx, "b's folder listed", `(() => { const l = document.querySelector('[data-review=files] .file-list');
		return !!l && !!l.querySelector('[data-entry="a.txt"]') && !l.querySelector('[data-entry=".git"]'); })()`)
	if eval[bool](t, ctx, `!!document.querySelector('.thread-tabs [data-tab=terminal]')`) {
		t.Error("a Terminal tab for a thread whose agent runs in no terminal")
	}
	run(t, ctx, "open b's file", click(chromedp.CSS(`[data-entry="a.txt"] a`)))
	until(t, ctx, "b's file's text", `((document.querySelector('[data-review=files] pre[data-file="a.txt"]')||{}).innerText||"").includes("two on b")`)
	shot(t, ctx, "hub-node-files")

	run(t, ctx, "open Changes", click(chromedp.CSS(`.thread-tabs [data-tab=changes]`)))
	until(t, ctx, "b's change", `!!document.querySelector('[data-changed="a.txt"]') && !!document.querySelector('[data-branch=main]')`)
	run(t, ctx, "commit at the hub", chromedp.SendKeys(chromedp.CSS(`input[aria-label="Commit message"]`), "two, from the hub"),
		click(chromedp.CSS(`.ship button[type=submit]`)))
	until(t, ctx, "the commit is said", `((document.querySelector('[data-ship-result=ok]')||{}).textContent||"").includes("Committed")`)
	if got := gitIn(t, b.work, "log", "-1", "--format=%s"); got != "two, from the hub" {
		t.Errorf("b's newest commit says %q, want the message typed at the hub", got)
	}
	run(t, ctx, "push at the hub", click(chromedp.CSS(`.ship button:nth-of-type(3)`)))
	until(t, ctx, "the push is said", `((document.querySelector('[data-ship-result=ok]')||{}).textContent||"").includes("Pushed main to origin")`)
	if local, pushed := gitIn(t, b.work, "rev-parse", "HEAD"), gitIn(t, remote, "rev-parse", "main"); local != pushed {
		t.Errorf("b's remote's main is %s, want b's commit %s", pushed, local)
	}

	chat := strings.TrimPrefix(strings.SplitN(eval[string](t, ctx, `location.hash`), "?", 2)[0], "#/c/")
	phone := browser(t, 390, 844)
	run(t, phone, "phone: b's folder at the hub", chromedp.Navigate(hub.LoginURL()+"#/c/"+chat+"?tab=files"))
	until(t, phone, "phone: b's files inside the screen", `(() => { const w = document.documentElement.clientWidth; const l = document.querySelector('[data-review=files] .file-list');
		return !!l && !!l.querySelector('[data-entry="a.txt"]') && l.getBoundingClientRect().right <= w && document.documentElement.scrollWidth <= w; })()`)
	shot(t, phone, "phone-hub-node-files")
}

// At the hub's dashboard a thread of machine b whose Claude Code runs in
// tmux on b has a Terminal tab: b's pane, read on b, drawn by xterm.js;
// keys typed once typing is switched on reach b's pane through b.
func TestTheHubsDashboardShowsANodesTerminal(t *testing.T) {
	hub, _ := hubAndNode(t, "claude-tmux:tmux")
	ctx := browser(t, 1440, 900)
	run(t, ctx, "log in at the hub", chromedp.Navigate(hub.LoginURL()+"#/new"), chromedp.WaitVisible(chromedp.CSS(`form.newthread select[name=machine]`)))
	until(t, ctx, "machine b offered", `[...document.querySelectorAll("form.newthread select[name=machine] option")].some(o => o.value === "b")`)
	run(t, ctx, "pick machine b", chromedp.SetValue(chromedp.CSS(`form.newthread select[name=machine]`), "b"))
	until(t, ctx, "b's claude-tmux offered", `[...document.querySelectorAll("form.newthread select[name=agent] option")].some(o => o.value === "claude-tmux")`)
	run(t, ctx, "choose claude-tmux", chromedp.Evaluate[chromedp.Void](`(() => {
		const sel = document.querySelector("form.newthread select[name=agent]"); sel.value = "claude-tmux"; sel.dispatchEvent(new Event("change", {bubbles: true}));
	})()`))
	until(t, ctx, "the form holds it", `document.querySelector("form.newthread select[name=agent]").value === "claude-tmux"`)
	run(t, ctx, "start on b", chromedp.SendKeys(chromedp.CSS(`form.newthread textarea`), PromptEcho), click(chromedp.CSS(`form.newthread button[type=submit]`)))
	until(t, ctx, "the answer in the chat", pageHas("You said it."))

	run(t, ctx, "open the Terminal tab", click(chromedp.CSS(`.thread-tabs [data-tab=terminal]`)))
	until(t, ctx, "b's pane drawn by xterm.js at the hub", termShows("You said it.")+" && "+termShows(PromptEcho))
	shot(t, ctx, "hub-node-terminal")
	const typed = "keys typed at the hub"
	run(t, ctx, "switch typing on", click(chromedp.CSS(`[data-typing]`)))
	until(t, ctx, "typing is on", `document.querySelector('[data-typing]').getAttribute("aria-pressed") === "true"`)
	run(t, ctx, "type", typeInto(`[data-terminal] textarea`, typed))
	until(t, ctx, "the typed keys show in b's pane", termShows(typed))
}
