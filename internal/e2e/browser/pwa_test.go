package browser

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/push"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/webpushsvc"
)

// On a phone's viewport the dashboard is an installable app: Chromium finds the
// manifest valid and no installability error, and the service worker installs.
// The push the daemon sent for a real Claude Code permission card (taken from
// the Web Push stand-in, decrypted) names the thread and the card, and its
// link, what a tap opens, shows the thread with the card in view. With parley
// gone, the app still opens, and says it is offline. (Delivering that push to
// the worker through ServiceWorker.deliverPushMessage was lost now and then
// under load with no error from the worker: not asserted here.)
func TestInstallableAppAndOffline(t *testing.T) {
	r := newRig(t)
	svc := r.pushService(t)
	r.pairDevice(t, svc, "phone")

	ctx := browser(t, 390, 844)
	run(t, ctx, "sign in on a phone", phoneViewport(), chromedp.Navigate(r.LoginURL()))
	until(t, ctx, "the phone layout", `!!document.querySelector(".phone")`)
	until(t, ctx, "the service worker controls the page", `navigator.serviceWorker.controller !== null`)

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

	var n push.Message
	if err := json.Unmarshal(ps[0].Plaintext, &n); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(n.Title, "Claude Code on ") || !strings.HasPrefix(n.Body, "asks for permission") || n.Tag != tag ||
		n.URL != "/#/t/"+string(thread)+"?card="+rid {
		t.Fatalf("the push would show %+v", n)
	}

	// Its link (what a tap opens) shows the thread with the card in view.
	run(t, ctx, "open the notification's link", chromedp.Navigate(r.Base+n.URL))
	until(t, ctx, "the card in view", `(() => { const el = document.querySelector('[data-card=`+js(rid)+`]');
		if (!el) return false; const b = el.getBoundingClientRect(); return b.top >= 0 && b.top < innerHeight; })()`)

	// parley goes away: the installed app still opens, and says it is offline.
	r.stop()
	run(t, ctx, "open the app with parley away", chromedp.Navigate(r.Base+"/"))
	until(t, ctx, "the kept shell says it is offline", `!!document.querySelector(".phone") && !!document.querySelector(".offline")`)
}
