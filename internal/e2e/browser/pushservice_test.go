//go:build e2e

package browser

import (
	"strings"
	"testing"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/push"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/pushchild"
	"github.com/parleyhq/parley/internal/testkit/webpushsvc"
)

// The notifications control reaches "on" for real: headless Chromium's own
// pushManager.subscribe() goes to its push service (GCM, pointed by its
// command line at the stand-in on loopback), parley takes the subscription
// Chromium made, and a permission card's push, sent by parley to that
// endpoint, arrives over Chromium's push connection, is decrypted by
// Chromium and shown by the service worker. Nothing in the page is replaced.
func TestNotificationsSubscribeForRealAndThePushArrives(t *testing.T) {
	r := newPushRig(t)
	svc := webpushsvc.Start(t)
	gcm := svc.StartGCM(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the push service heard %v, forwarded %d, refused %v", gcm.Requests(), gcm.Forwarded(), svc.Rejected())
		}
	})
	// parley serve again, its pushes through the stand-in's proxy.
	r.stop()
	r.env = append(r.env, pushchild.ProxyEnv(gcm))
	r.start()
	var key struct {
		PublicKey string `json:"public_key"`
	}
	r.rest(t, "GET", "/api/push/key", nil, &key)
	svc.ExpectKey(t, key.PublicKey)

	var flags []chromedp.ExecAllocatorOption
	for k, v := range gcm.ChromiumFlags() {
		flags = append(flags, chromedp.Flag(k, v))
	}
	// GCM is background networking: the rig's browsers turn it off.
	flags = append(flags, chromedp.Flag("disable-background-networking", false))
	ctx, closeIt := startBrowserWith(t, 1280, 860, flags...)
	t.Cleanup(closeIt)
	run(t, ctx, "sign in", chromedp.Navigate(r.LoginURL()), chromedp.WaitVisible(chromedp.CSS(`.side`)))
	until(t, ctx, "the service worker controls the page", `navigator.serviceWorker.controller !== null`)
	eval[bool](t, ctx, `(window.swSaid = [], navigator.serviceWorker.addEventListener("message", (e) => {
		const m = e.data || {};
		if (m.type === "push-shown") window.swSaid.push(m.kind + " " + m.tag);
		if (m.type === "push-error") window.swSaid.push("error " + m.message);
	}), true)`)
	// The person's "Allow" (headless Chromium asks nobody).
	if _, err := chromedp.CallBrowser(ctx, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
		Permission: &cdpbrowser.PermissionDescriptor{Name: "notifications"}, Setting: "granted", Origin: r.Base}); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "turn notifications on", click(chromedp.CSS(`.account .notify-opt-in`)))
	said := `(document.querySelector(".account .notify-said")||{textContent:""}).textContent`
	untilWithin(t, ctx, wait, "subscribed: on even with parley closed", said+`.startsWith("On: this device is notified")`)
	endpoint := eval[string](t, ctx, `navigator.serviceWorker.ready.then((r) => r.pushManager.getSubscription()).then((s) => s ? s.endpoint : "")`)
	if !strings.Contains(endpoint, ".google") || !strings.Contains(endpoint, "/") {
		t.Errorf("the subscription's endpoint %q is not Chromium's push service", endpoint)
	}

	// A permission card: parley pushes to the endpoint Chromium made, and
	// the worker shows it.
	c := chatsock.Dial(t, r.Base, r.Token, client.Options{Chat: "real-push", Since: -1})
	c.WaitFor(0, wait, chatsock.Type(chat.TypeReplayDone), "ready")
	c.Send(chatsock.Msg("m1", PromptBash))
	i := c.WaitFor(0, wait, chatsock.Type(chat.TypePermissionRequest), "permission card")
	tag := push.Tag(c.Snapshot()[i].Thread, chatsock.FieldOf(c.Snapshot()[i], "request_id").(string))
	untilWithin(t, ctx, wait, "the worker showed the card's push", `window.swSaid.includes(`+js("open "+tag)+`)`)
	if n := gcm.Forwarded(); n < 1 {
		t.Errorf("%d pushes went through the push service, want the card's", n)
	}
	if rej := svc.Rejected(); len(rej) > 0 {
		t.Errorf("the push service refused pushes: %v", rej)
	}
}
