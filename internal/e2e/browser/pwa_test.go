package browser

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/serviceworker"
	"github.com/chromedp/chromedp"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/push"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/webpushsvc"
)

// registrationID waits for the page's service worker registration as the
// DevTools protocol names it.
func registrationID(t *testing.T, ctx context.Context, scope string) serviceworker.RegistrationID {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	events := chromedp.Events(c, serviceworker.WorkerRegistrationUpdated)
	if _, err := chromedp.Call(c, serviceworker.Enable, cdp.Empty{}); err != nil {
		t.Fatalf("ServiceWorker.enable: %v", err)
	}
	for ev, err := range events {
		if err != nil {
			t.Fatalf("no service worker registration for %s: %v", scope, err)
		}
		for _, r := range ev.Registrations {
			if r.ScopeURL == scope && !r.IsDeleted {
				return r.RegistrationID
			}
		}
	}
	t.Fatalf("no service worker registration for %s", scope)
	return ""
}

// deliver hands a push to the page's service worker as the push service would.
func deliver(t *testing.T, ctx context.Context, origin string, reg serviceworker.RegistrationID, data []byte) {
	t.Helper()
	if _, err := chromedp.Call(ctx, serviceworker.DeliverPushMessage, serviceworker.DeliverPushMessageParams{
		Origin: origin, RegistrationID: reg, Data: string(data)}); err != nil {
		t.Fatalf("ServiceWorker.deliverPushMessage: %v", err)
	}
}

// untilPromise polls an asynchronous JavaScript condition until it is true.
func untilPromise(t *testing.T, ctx context.Context, what, js string) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		ok, err := chromedp.Run(c, chromedp.Evaluate[bool](js, chromedp.EvalAwaitPromise))
		cancel()
		if err == nil && ok {
			return
		}
		c, cancel = context.WithTimeout(ctx, time.Second)
		_ = chromedp.Do(c, chromedp.Sleep(100*time.Millisecond)) // the poll's pace, not a synchronisation
		cancel()
	}
	t.Fatalf("%s: still false after %v: %s", what, wait, js)
}

// notificationsJS lists the service worker's notifications as JSON.
const notificationsJS = `navigator.serviceWorker.ready.then(r => r.getNotifications()).then(ns =>
	JSON.stringify(ns.map(n => ({title: n.title, body: n.body, tag: n.tag, url: n.data && n.data.url}))))`

// On a phone's viewport the dashboard is an installable app: Chromium finds the
// manifest valid and no installability error, and the service worker installs.
// The push the daemon sent for a real Claude Code permission card (taken from
// the Web Push stand-in, decrypted), delivered to the worker through the
// DevTools protocol, shows a notification with who asks and what; its link
// opens the thread at the card; the closing push takes it away. With parley
// gone, the app still opens, and says it is offline.
func TestInstallableAppPushAndOffline(t *testing.T) {
	r := newRig(t)
	svc := r.pushService(t)
	_, _, sub := r.pairDevice(t, svc, "phone")

	ctx := browser(t, 390, 844)
	run(t, ctx, "sign in on a phone", phoneViewport(), chromedp.Navigate(r.LoginURL()))
	until(t, ctx, "the phone layout", `!!document.querySelector(".phone")`)
	until(t, ctx, "the service worker controls the page", `navigator.serviceWorker.controller !== null`)
	reg := registrationID(t, ctx, r.Base+"/")

	m, err := chromedp.Call(ctx, page.GetAppManifest, page.GetAppManifestParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Errors) > 0 || m.Manifest == nil || m.Manifest.Name != "parley" || !strings.Contains(strings.ToLower(m.Manifest.Display), "standalone") ||
		m.Manifest.StartURL != r.Base+"/" || len(m.Manifest.Icons) < 3 {
		t.Fatalf("manifest: errors %+v, parsed %+v", m.Errors, m.Manifest)
	}
	inst, err := chromedp.Call(ctx, page.GetInstallabilityErrors, cdp.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range inst.InstallabilityErrors {
		t.Errorf("installability error %s %+v", e.ErrorID, e.ErrorArguments)
	}
	if resp := get(t, r.Base+"/manifest.webmanifest", nil); resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/manifest+json") {
		t.Fatalf("the manifest without a cookie: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}

	// A real card, and the push the daemon sent for it.
	c := chatsock.Dial(t, r.Base, r.Token, client.Options{Chat: "pwa", Since: -1})
	c.WaitFor(0, wait, chatsock.Type(chat.TypeReplayDone), "ready")
	c.Send(chatsock.Msg("m1", PromptBash))
	i := c.WaitFor(0, wait, chatsock.Type(chat.TypePermissionRequest), "permission card")
	rid := chatsock.FieldOf(c.Snapshot()[i], "request_id").(string)
	thread := c.Snapshot()[i].Thread
	tag := push.Tag(thread, rid)
	ps := svc.WaitFor(t, wait, "the card's push", func(ps []webpushsvc.Push) bool { return len(ps) == 1 })

	if _, err := chromedp.CallBrowser(ctx, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
		Permission: &cdpbrowser.PermissionDescriptor{Name: "notifications"}, Setting: "granted", Origin: r.Base}); err != nil {
		t.Fatal(err)
	}
	deliver(t, ctx, r.Base, reg, ps[0].Plaintext)
	untilPromise(t, ctx, "the notification", `(`+notificationsJS+`).then(s => s.includes(`+js(tag)+`))`)
	var shown []struct{ Title, Body, Tag, URL string }
	if err := json.Unmarshal([]byte(eval[string](t, ctx, notificationsJS)), &shown); err != nil || len(shown) != 1 {
		t.Fatalf("notifications: %v %+v", err, shown)
	}
	n := shown[0]
	if !strings.HasPrefix(n.Title, "Claude Code on ") || !strings.HasPrefix(n.Body, "asks for permission") || n.Tag != tag ||
		n.URL != "/#/t/"+string(thread)+"?card="+rid {
		t.Fatalf("the notification shows %+v", n)
	}
	_ = sub

	// Its link (what a tap opens) shows the thread with the card in view.
	run(t, ctx, "open the notification's link", chromedp.Navigate(r.Base+n.URL))
	until(t, ctx, "the card in view", `(() => { const el = document.querySelector('[data-card=`+js(rid)+`]');
		if (!el) return false; const b = el.getBoundingClientRect(); return b.top >= 0 && b.top < innerHeight; })()`)

	// Answered elsewhere: the closing push takes the notification away.
	c.Send(map[string]any{"type": "permission_response", "request_id": rid, "option_id": chat.OptionAllowOnce})
	ps = svc.WaitFor(t, wait, "the closing push", func(ps []webpushsvc.Push) bool { return len(ps) == 2 })
	deliver(t, ctx, r.Base, reg, ps[1].Plaintext)
	untilPromise(t, ctx, "the notification is gone", `(`+notificationsJS+`).then(s => !s.includes(`+js(tag)+`))`)

	// parley goes away: the installed app still opens, and says it is offline.
	r.stop()
	run(t, ctx, "open the app with parley away", chromedp.Navigate(r.Base+"/"))
	until(t, ctx, "the kept shell says it is offline", `!!document.querySelector(".phone") && !!document.querySelector(".offline")`)
}
