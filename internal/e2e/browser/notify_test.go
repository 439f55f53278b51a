//go:build e2e

package browser

import (
	"fmt"
	"testing"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
)

// Notifications have one control (not a link that vanishes and a second
// look-alike under Devices), and it ends every attempt in words: blocked,
// no answer from the browser (it does not sit on "asking…"), unsupported, on
// without Web Push, on without a service worker. Desktop and phone.
func TestOneNotificationsControlSaysEveryOutcome(t *testing.T) {
	r := newRig(t)
	for _, size := range []struct {
		name          string
		width, height int
	}{{"desktop", 1280, 860}, {"phone", 390, 844}} {
		t.Run(size.name, func(t *testing.T) {
			ctx := browser(t, size.width, size.height)
			var acts []chromedp.Action[chromedp.Void]
			if size.name == "phone" {
				acts = append(acts, phoneViewport())
			}
			run(t, ctx, "sign in", append(acts, chromedp.Navigate(r.LoginURL()))...)
			button := `.account .notify-opt-in`
			until(t, ctx, "the control shows", `!!document.querySelector("`+button+`:enabled")`)
			if n := eval[int](t, ctx, `[...document.querySelectorAll("button")].filter(b => /notif/i.test(b.textContent)).length`); n != 1 {
				t.Errorf("%d notification buttons on the page, want one", n)
			}
			if !axNamed(t, ctx, "button", "Turn on notifications") {
				t.Error(`no button named "Turn on notifications" in the accessibility tree`)
			}
			said := `(document.querySelector(".account .notify-said")||{textContent:""}).textContent`
			attempt := func(what, fake, want string) {
				t.Helper()
				run(t, ctx, what, chromedp.Evaluate[chromedp.Void](fake), click(chromedp.CSS(button)))
				until(t, ctx, what+": the control says "+want, fmt.Sprintf(`%s.startsWith(%s) && !document.querySelector("%s[aria-busy=true]")`, said, js(want), button))
			}
			// Headless Chromium asks nobody: the page's browser APIs are
			// replaced with what a browser answers in each case.
			attempt("the browser never answers", `Notification.requestPermission = () => new Promise(() => {})`, "The browser did not answer within 30 s")
			attempt("the person blocks them", `Notification.requestPermission = () => Promise.resolve("denied")`, "Notifications are blocked for this site")
			attempt("the question is closed", `Notification.requestPermission = () => Promise.resolve("default")`, "Not turned on: the browser's question was closed")
			attempt("allowed, no service worker comes", `Notification.requestPermission = () => Promise.resolve("granted");
				Object.defineProperty(navigator.serviceWorker, "ready", { configurable: true, get: () => new Promise(() => {}) })`,
				"On while a parley tab is open; no service worker runs here")
			attempt("allowed, no Web Push", `Object.defineProperty(navigator, "serviceWorker", { configurable: true, value: undefined })`,
				"On while a parley tab is open; this browser has no Web Push")
			attempt("a browser without notifications", `delete window.Notification`, "This browser cannot show notifications.")
		})
	}

	// Blocked before: the page says so at once, where the old link vanished.
	ctx := browser(t, 1280, 860)
	run(t, ctx, "sign in", chromedp.Navigate(r.LoginURL()), chromedp.WaitVisible(chromedp.CSS(`.side`)))
	if _, err := chromedp.CallBrowser(ctx, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
		Permission: &cdpbrowser.PermissionDescriptor{Name: "notifications"}, Setting: "denied", Origin: r.Base}); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`.side`)))
	until(t, ctx, "a blocked site is told so without a click", `(document.querySelector(".account .notify-said")||{textContent:""}).textContent.startsWith("Notifications are blocked for this site")`)
}
