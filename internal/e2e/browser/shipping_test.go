//go:build e2e

package browser

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// standInGh puts a program named gh first on PATH for this test only (parley
// serve inherits it): it records its argv, says it is signed in once
// signedIn exists, and answers `gh pr create` with a pull request's URL,
// as gh does.
func standInGh(t *testing.T) (argv, signedIn string) {
	t.Helper()
	dir := t.TempDir()
	argv, signedIn = filepath.Join(dir, "argv"), filepath.Join(dir, "signed-in")
	script := `#!/bin/sh
if [ "$1" = auth ]; then
	[ -e '` + signedIn + `' ] && exit 0
	echo 'You are not logged into any GitHub hosts. To log in, run: gh auth login' >&2
	exit 1
fi
printf '%s\n' "$@" > '` + argv + `'
echo 'https://github.com/acme/proj/pull/7'
`
	if err := os.WriteFile(filepath.Join(dir, "gh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return argv, signedIn
}

// A thread's change longer than one page (1 MiB of patch): the Changes tab
// shows the first page with "Show more of the diff", which loads the rest
// (the last file's lines appear, the button goes). Open PR shows the
// remote's compare page while gh is not signed in, and the pull request gh
// opened once it is. On the desktop and on a 390×844 phone, inside its screen.
func TestChangesTabPagesALongDiffAndOpensThePR(t *testing.T) {
	argv, signedIn := standInGh(t)
	r := newRig(t)
	gitIn(t, r.work, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(r.work, "README"), []byte("proj\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, r.work, "add", "-A")
	gitIn(t, r.work, "commit", "-q", "-m", "start")
	gitIn(t, r.work, "remote", "add", "origin", "git@github.com:acme/proj.git")
	gitIn(t, r.work, "switch", "-q", "-c", "feature")

	ctx := browser(t, 1280, 860)
	run(t, ctx, "sign in", chromedp.Navigate(r.LoginURL()))
	startThread(t, ctx, PromptEcho)
	until(t, ctx, "the answer", pageHas("You said it."))

	// Four new files of 300 KB (each folded as large) and a small last one:
	// more than one page of patch, the last file on the second.
	line := strings.Repeat("x", 49) + "\n"
	for i := 1; i <= 4; i++ {
		if err := os.WriteFile(filepath.Join(r.work, fmt.Sprintf("big%d.txt", i)), []byte(strings.Repeat(line, 6000)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(r.work, "zz-last.txt"), []byte("the last line of the diff\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const lastShown = `((document.querySelector('[data-diff="zz-last.txt"] .d-add')||{}).textContent||"").includes("the last line of the diff")`
	pages := func(ctx context.Context, where string) {
		t.Helper()
		until(t, ctx, where+": the first page, every file listed, and more to show", `!!document.querySelector('[data-more]') && !!document.querySelector('[data-diff="big1.txt"] [data-large]') &&
			!!document.querySelector('[data-changed="zz-last.txt"]') && !document.querySelector('[data-diff="zz-last.txt"]')`)
		until(t, ctx, where+": the more button inside the screen", `document.querySelector('[data-more]').getBoundingClientRect().right <= document.documentElement.clientWidth`)
		run(t, ctx, where+": show more", click(chromedp.CSS(`[data-more]`)))
		until(t, ctx, where+": the rest of the diff, the last file's line, no more button", lastShown+` && !document.querySelector('[data-more]')`)
		if n := eval[int](t, ctx, `document.querySelectorAll('[data-diff="big4.txt"]').length`); n != 1 {
			t.Errorf("%s: big4.txt shows %d times after the second page, want once", where, n)
		}
	}
	run(t, ctx, "open Changes", click(chromedp.CSS(`.thread-tabs [data-tab=changes]`)))
	pages(ctx, "desktop")
	shot(t, ctx, "desktop-changes-paged")

	const openPR = `.ship button:nth-of-type(4)`
	run(t, ctx, "Open PR with gh not signed in", click(chromedp.CSS(openPR)))
	until(t, ctx, "the compare page is offered", `(() => { const r = document.querySelector('[data-ship-result=ok]');
		return !!r && r.textContent.includes("Open the pull request here") && !!r.querySelector('a[href="https://github.com/acme/proj/compare/main...feature?expand=1"]'); })()`)
	if _, err := os.Stat(argv); !os.IsNotExist(err) {
		t.Fatalf("gh pr create ran while gh was not signed in: %v", err)
	}
	if err := os.WriteFile(signedIn, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "Open PR with gh signed in", click(chromedp.CSS(openPR)))
	until(t, ctx, "the pull request gh opened is linked", `(() => { const r = document.querySelector('[data-ship-result=ok]');
		return !!r && r.textContent.includes("Pull request opened") && !!r.querySelector('a[href="https://github.com/acme/proj/pull/7"][target=_blank]'); })()`)
	if got, _ := os.ReadFile(argv); string(got) != "pr\ncreate\n--head\nfeature\n--fill\n" {
		t.Errorf("gh ran with %q, want pr create --head feature --fill", got)
	}
	shot(t, ctx, "desktop-changes-pr")

	chat := strings.TrimPrefix(strings.SplitN(eval[string](t, ctx, `location.hash`), "?", 2)[0], "#/c/")
	phone := browser(t, 390, 844)
	run(t, phone, "open Changes on the phone", chromedp.Navigate(r.LoginURL()+"#/c/"+chat+"?tab=changes"))
	pages(phone, "phone")
	run(t, phone, "Open PR on the phone", click(chromedp.CSS(openPR)))
	until(t, phone, "the pull request's link inside the screen", `(() => { const a = document.querySelector('[data-ship-result=ok] a[href="https://github.com/acme/proj/pull/7"]');
		const w = document.documentElement.clientWidth;
		return !!a && a.getBoundingClientRect().left >= 0 && document.documentElement.scrollWidth <= w; })()`)
	shot(t, phone, "phone-changes-pr")
}
