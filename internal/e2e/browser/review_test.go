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

// unnamedControls is the JS for "the controls under sel that have no
// accessible name" (aria-label, aria-labelledby, a label, or their text).
func unnamedControls(sel string) string {
	return fmt.Sprintf(`[...document.querySelectorAll(%s)].flatMap(s => [...s.querySelectorAll("a, button, input, textarea, select, [role=region]")])
		.filter(e => !(e.getAttribute("aria-label") || e.getAttribute("aria-labelledby") || (e.labels && e.labels.length) || e.textContent.trim()))
		.map(e => e.outerHTML.slice(0, 80))`, js(sel))
}

// The files of a thread, from the path in a tool card: the Write tool's file
// opens in the Files tab with its text and line numbers; the folder lists
// what git does not ignore (the ignored file only when asked); a path out
// of the thread's directory is refused in words; the phone shows the same
// file inside its screen. Every control is named.
func TestFilesTabFromAToolCard(t *testing.T) {
	r := newRig(t)
	if out, err := exec.Command("git", "-C", r.work, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	for name, body := range map[string]string{".gitignore": "ignored.txt\n", "ignored.txt": "hidden by git\n"} {
		if err := os.WriteFile(filepath.Join(r.work, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := browser(t, 1280, 860)
	run(t, ctx, "sign in", chromedp.Navigate(r.LoginURL()))
	startThread(t, ctx, PromptWrite)
	until(t, ctx, "the write asks permission", `!!document.querySelector(".card.perm[data-state=open] button.k-allow_once:enabled")`)
	run(t, ctx, "allow once", click(chromedp.CSS(`.card.perm[data-state=open] button.k-allow_once`)))
	until(t, ctx, "the file is written", pageHas("Written."))
	notes := filepath.Join(r.work, WrittenFile)
	until(t, ctx, "the Write tool's card links its file", fmt.Sprintf(`!!document.querySelector('.tool [data-file-link=%s]')`, js(notes)))
	run(t, ctx, "open the file from the card", click(chromedp.CSS(fmt.Sprintf(`.tool .cmdline [data-file-link=%s]`, js(notes)))))
	fileShown := fmt.Sprintf(`(() => { const p = document.querySelector('[data-review=files] pre[data-file=%s]');
		return !!p && p.innerText.includes("first line") && p.innerText.includes("second line") && [...p.querySelectorAll(".ln")].map(e => e.textContent).join(",") === "1,2"; })()`, js(WrittenFile))
	until(t, ctx, "the Files tab shows the file with line numbers", fileShown)
	if cur := eval[string](t, ctx, `document.querySelector('.thread-tabs [aria-current=page]').textContent`); cur != "Files" {
		t.Errorf("current tab %q, want Files", cur)
	}
	shot(t, ctx, "desktop-files")

	run(t, ctx, "go up to the thread's folder", click(chromedp.CSS(`[data-crumb]`)))
	until(t, ctx, "the folder lists the file and what git does not ignore", `(() => { const l = document.querySelector('[data-review=files] .file-list');
		return !!l && !!l.querySelector('[data-entry="notes.txt"]') && !!l.querySelector('[data-entry=".gitignore"]') && !!l.querySelector('[data-entry="proj"][data-kind=dir]'); })()`)
	if eval[bool](t, ctx, `!!document.querySelector('[data-entry="ignored.txt"]') || !!document.querySelector('[data-entry=".git"]')`) {
		t.Error("an ignored file (or .git) is listed without asking")
	}
	run(t, ctx, "show ignored files", click(chromedp.CSS(`.files-bar input[type=checkbox]`)))
	until(t, ctx, "the ignored file is listed", `!!document.querySelector('[data-entry="ignored.txt"]')`)
	if bad := eval[[]string](t, ctx, unnamedControls(".thread-tabs, .review")); len(bad) > 0 {
		t.Errorf("controls without a name: %v", bad)
	}

	chat := strings.TrimPrefix(strings.SplitN(eval[string](t, ctx, `location.hash`), "?", 2)[0], "#/c/")
	run(t, ctx, "ask for a path out of the thread's folder", chromedp.Evaluate[chromedp.Void](`location.hash = "#/c/`+chat+`?tab=files&path=../outside.txt"`))
	until(t, ctx, "the server's refusal is shown", `((document.querySelector('[data-files-error]')||{}).textContent||"").includes("outside the thread's directory")`)
	run(t, ctx, "ask for an absolute path elsewhere", chromedp.Evaluate[chromedp.Void](`location.hash = "#/c/`+chat+`?tab=files&path=/etc/passwd"`))
	until(t, ctx, "the page says it is outside", `[...document.querySelectorAll('[data-review=files] [role=alert]')].some(e => e.textContent.includes("outside the thread's directory"))`)

	phone := browser(t, 390, 844)
	run(t, phone, "open the file on the phone", chromedp.Navigate(r.LoginURL()+"#/c/"+chat+"?tab=files&path="+WrittenFile))
	until(t, phone, "the phone shows the file", fileShown)
	until(t, phone, "inside the screen, the tabs too", `(() => { const w = document.documentElement.clientWidth;
		return document.querySelector('.thread-tabs').getBoundingClientRect().right <= w && document.querySelector('[data-review=files]').getBoundingClientRect().right <= w
			&& document.documentElement.scrollWidth <= w; })()`)
	if bad := eval[[]string](t, phone, unnamedControls(".thread-tabs, .review")); len(bad) > 0 {
		t.Errorf("phone: controls without a name: %v", bad)
	}
	shot(t, phone, "phone-files")
	run(t, phone, "back to the chat", click(chromedp.CSS(`.thread-tabs [data-tab=chat]`)))
	until(t, phone, "the chat and its box are back", `!!document.querySelector("textarea[aria-label=Message]") && document.querySelector("textarea[aria-label=Message]").offsetParent !== null && !document.querySelector('.review')`)
}
