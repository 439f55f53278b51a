//go:build e2e

package browser

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// The installed app opened while parley is away shows this device's copy of
// the recent threads (IndexedDB) and a thread's last events, read-only and
// saying so, and a message typed then is shown waiting to be sent. On a
// 390×844 phone, where the app is installed.
func TestOfflineAppShowsTheKeptThreadsReadOnly(t *testing.T) {
	r := newRig(t)
	ctx := browser(t, 390, 844)
	run(t, ctx, "sign in on a phone", phoneViewport(), chromedp.Navigate(r.LoginURL()))
	until(t, ctx, "the service worker controls the page", `navigator.serviceWorker.controller !== null`)
	run(t, ctx, "new thread", click(chromedp.CSS(`.p-bar button.primary`)))
	startThread(t, ctx, PromptEcho+" to read offline")
	until(t, ctx, "the answer arrives", pageHas("You said it."))
	// The copy is written once events pause: wait until IndexedDB holds it.
	until(t, ctx, "the device keeps the thread", `window.__kept === true || (window.__keptAsk || (window.__keptAsk = new Promise((done) => {
		const q = indexedDB.open("parley-offline");
		q.onerror = () => done(false);
		q.onsuccess = () => { const g = q.result.transaction("logs").objectStore("logs").getAll();
			g.onerror = () => done(false);
			g.onsuccess = () => done(g.result.some(k => k.events.some(e => e.type === "agent_chunk"))); };
	}).then((v) => { window.__kept = v; window.__keptAsk = null; })), false)`)

	r.stop()
	run(t, ctx, "open the app with parley away", chromedp.Navigate(r.Base+"/"))
	until(t, ctx, "the kept list says it is this device's copy and holds the thread",
		`!!document.querySelector("[data-kept-list]") && [...document.querySelectorAll(".p-thread")].some(e => e.innerText.includes(`+js(PromptEcho+" to read offline")+`))`)
	run(t, ctx, "open the kept thread", click(chromedp.CSS(`.p-thread`)))
	until(t, ctx, "the conversation from the device's copy, said to be read-only", pageHas("You said it.")+` && (document.querySelector("[data-kept]")||{innerText:""}).innerText.includes("read-only")`)
	send(t, ctx, "sent while away")
	until(t, ctx, "the message shown waiting to be sent", receipt("sent while away", "sending"))
	if !axNamed(t, ctx, "button", "Send") {
		t.Error("no Send button in the accessibility tree")
	}
}
