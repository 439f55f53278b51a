//go:build e2e

package browser

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	cdpnet "github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/parleyhq/parley/internal/testkit"

	_ "modernc.org/sqlite"
)

// A person signs in with the link parley printed, signs out with the button,
// and signs in again with the token in the form. Afterwards Chromium's own
// History database holds no token, and the only code in it is the printed
// link's, spent: opening it again signs nobody in. The address bar never shows
// the code; the signed-out cookie gets 401.
func TestSignInLeavesNoSecretInHistory(t *testing.T) {
	r := newRig(t)
	profile := t.TempDir()
	ctx, closeBrowser := startBrowserIn(t, profile, 1280, 860)
	closed := false
	defer func() {
		if !closed {
			closeBrowser()
		}
	}()
	code := r.Printed[strings.Index(r.Printed, "code=")+len("code="):]

	run(t, ctx, "open the printed sign-in link", chromedp.Navigate(r.Printed), chromedp.WaitVisible(chromedp.CSS(`.side`)))
	if loc := eval[string](t, ctx, `location.href`); loc != r.Base+"/" {
		t.Errorf("address bar after sign-in: %q, want %s/ (no code)", loc, r.Base)
	}
	session := sessionCookie(t, ctx, r.Base)
	if session == nil || !session.HTTPOnly || session.Value == r.Token {
		t.Fatalf("session cookie %+v: want an HttpOnly session id, not the token", session)
	}

	run(t, ctx, "sign out", click(chromedp.CSS(`.side .sign-out button`)))
	until(t, ctx, "the sign-in page shows", `!!document.querySelector("input[name=token]") && !document.querySelector(".side")`)
	if resp := get(t, r.Base+"/api/threads", &http.Cookie{Name: session.Name, Value: session.Value}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the signed-out cookie: GET /api/threads got %d, want 401", resp.StatusCode)
	}
	if !strings.Contains(r.output(), "device signed out") {
		t.Error(`parley's log does not say "device signed out"`)
	}

	run(t, ctx, "sign in with the token in the form",
		chromedp.SendKeys(chromedp.CSS(`input[name=token]`), r.Token),
		click(chromedp.CSS(`form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`.side`)))
	if loc := eval[string](t, ctx, `location.href`); strings.Contains(loc, r.Token) || loc != r.Base+"/" {
		t.Errorf("address bar after the form: %q, want %s/", loc, r.Base)
	}

	// Chromium writes History in batches: wait until a page visited after
	// everything above is in the file, so the file holds the whole story.
	marker := "history-flushed-" + strings.Repeat("x", 8)
	run(t, ctx, "visit the marker", chromedp.Navigate(r.Base+"/?"+marker), chromedp.WaitVisible(chromedp.CSS(`.side`)))
	history := filepath.Join(profile, "Default", "History")
	testkit.Eventually(t, wait, func() bool {
		b, _ := os.ReadFile(history) // a file Chromium writes on its own clock
		return bytes.Contains(b, []byte(marker))
	}, "Chromium did not write its History")
	closeBrowser()
	closed = true

	for _, name := range []string{"History", "History-journal", "History-wal"} {
		b, err := os.ReadFile(filepath.Join(profile, "Default", name))
		if err == nil && bytes.Contains(b, []byte(r.Token)) {
			t.Errorf("the token is in Chromium's %s", name)
		}
	}
	db, err := sql.Open("sqlite", "file:"+history+"?mode=ro&immutable=1")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT url FROM urls`)
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for rows.Next() {
		var u string
		if err := rows.Scan(&u); err != nil {
			t.Fatal(err)
		}
		urls = append(urls, u)
	}
	rows.Close()
	for _, u := range urls {
		if strings.Contains(u, r.Token) {
			t.Errorf("History holds the token: %s", u)
		}
		pu, err := url.Parse(u)
		if err != nil || pu.Query().Get("code") == "" {
			continue
		}
		// The link that was opened: its code must be spent.
		if pu.Query().Get("code") != code {
			t.Errorf("History holds a code that is not the printed link's: %s", u)
		}
		resp := get(t, u, nil)
		for _, c := range resp.Cookies() {
			if strings.HasPrefix(c.Name, "parley_session") && c.MaxAge > 0 {
				t.Errorf("the link in History signs in again: %s", u)
			}
		}
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("the link in History: got %d, want 401", resp.StatusCode)
		}
	}
	t.Logf("History holds %d URLs: %q", len(urls), urls)
}

// A person aims at Sign out as the dashboard opens and clicks once its lists
// have come: the click signs out. The lists arrive above the sidebar's foot
// (Devices, Sign out) after the page is drawn; if the foot moved with them,
// the click would land on whatever took its place and the person would stay
// signed in (issue 30: a lost Sign out). The answers are held back while the
// person aims, so the page is surely drawn before its lists.
func TestSignOutStaysWhereThePersonAimed(t *testing.T) {
	r := newRig(t)
	ctx := browser(t, 1280, 860)
	release := holdRequests(t, ctx, "*/api/agents*", "*/api/threads*")
	run(t, ctx, "open the printed sign-in link", chromedp.Navigate(r.Printed), chromedp.WaitVisible(chromedp.CSS(`.side .sign-out button`)))
	if n := eval[int](t, ctx, `document.querySelectorAll(".side .agents li").length`); n != 0 {
		t.Fatalf("%d agents listed while their answer is held back", n)
	}
	type point struct{ X, Y float64 }
	centre := func(sel string) point {
		return eval[point](t, ctx, `(() => { const r = document.querySelector(`+js(sel)+`).getBoundingClientRect(); return {X: r.left + r.width / 2, Y: r.top + r.height / 2}; })()`)
	}
	controls := []string{`.side .sign-out button`, `.side details.devices > summary`}
	aimed := map[string]point{}
	for _, sel := range controls {
		aimed[sel] = centre(sel)
	}

	release()
	until(t, ctx, "the agents are listed", `!!document.querySelector(".side .agents li[data-agent=claude]")`)
	for _, sel := range controls {
		p := aimed[sel]
		at := eval[string](t, ctx, fmt.Sprintf(`(() => { const el = document.elementFromPoint(%v, %v); return el && el.closest(%s) ? "" : (el ? el.outerHTML.slice(0, 200) : "nothing"); })()`, p.X, p.Y, js(sel)))
		if at != "" {
			t.Errorf("%s moved as the lists came: where it was (%v,%v) is now %s (it is at %+v)", sel, p.X, p.Y, at, centre(sel))
		}
	}
	if t.Failed() {
		return
	}
	p := aimed[controls[0]]
	run(t, ctx, "click where Sign out was aimed at", chromedp.MouseClickXY(p.X, p.Y))
	until(t, ctx, "the sign-in page shows", `!!document.querySelector("input[name=token]") && !document.querySelector(".side")`)
}

// sessionCookie reads the dashboard's session cookie as Chromium holds it.
func sessionCookie(t *testing.T, ctx context.Context, base string) *cdpnet.Cookie {
	t.Helper()
	var out *cdpnet.Cookie
	run(t, ctx, "read the cookies", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		res, err := cdp.Call(ctx, tg, cdpnet.GetCookies, cdpnet.GetCookiesParams{URLs: []string{base + "/"}})
		if err != nil {
			return err
		}
		for _, c := range res.Cookies {
			if strings.HasPrefix(c.Name, "parley_session_") {
				out = c
			}
		}
		return nil
	}))
	return out
}
