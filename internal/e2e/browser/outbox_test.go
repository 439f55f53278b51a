//go:build e2e

package browser

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestOutboxKeepsTextPastLargeFiles (review A8): messages sent while parley is
// away wait in the page's outbox. Five messages with a 900 KB file each used
// to fill localStorage (the files in base64), and a text typed after them was
// then silently not kept. Now the files wait in IndexedDB and localStorage
// holds only text: the later text is kept; and when the browser refuses to
// keep a message, the page says so.
func TestOutboxKeepsTextPastLargeFiles(t *testing.T) {
	r := newRigWith(t, nil, "")
	ctx := browser(t, 1280, 860)
	run(t, ctx, "sign in", chromedp.Navigate(r.LoginURL()), chromedp.WaitVisible(chromedp.CSS(`.side`)))
	startThread(t, ctx, PromptEcho+" a thread for the outbox")
	until(t, ctx, "online", `window.parley.state.conn === "online"`)
	r.stop()
	until(t, ctx, "offline", `window.parley.state.conn !== "online"`)
	for i := 1; i <= 5; i++ {
		run(t, ctx, fmt.Sprintf("attach screenshot %d", i), chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
			const b = new Uint8Array(900 * 1024); for (let j = 0; j < b.length; j++) b[j] = (j * 7 + %d) & 255;
			const dt = new DataTransfer(); dt.items.add(new File([b], "shot-%d.bin", { type: "application/octet-stream" }));
			document.querySelector("form.composer").dispatchEvent(new DragEvent("drop", { dataTransfer: dt, bubbles: true, cancelable: true }));
		})()`, i, i)))
		until(t, ctx, "attached", fmt.Sprintf(`[...document.querySelectorAll(".attached .fname")].some(e => e.textContent === "shot-%d.bin")`, i))
		send(t, ctx, fmt.Sprintf("screenshot %d", i))
		until(t, ctx, "the composer is empty again", `!document.querySelector(".attached .fname")`)
	}
	send(t, ctx, "typed after the screenshots")
	until(t, ctx, "the text is kept in localStorage, the files are not", `(() => {
		const raw = localStorage.getItem("parley.outbox") || "[]"; const o = JSON.parse(raw);
		return o.some(e => e.text === "typed after the screenshots") && raw.length < 100000 && o.filter(e => e.has_files && /^screenshot \d$/.test(e.text)).length === 5; })()`)
	until(t, ctx, "the five files are kept in IndexedDB", `(window.__idb === 5) || (() => { const r = indexedDB.open("parley"); r.onsuccess = () => {
		const q = r.result.transaction("outbox-files").objectStore("outbox-files").count(); q.onsuccess = () => { window.__idb = q.result; }; }; return false; })()`)
	if eval[bool](t, ctx, `!!document.querySelector("[data-unsaved]")`) {
		t.Error("a warning that messages were not kept, though they were")
	}

	// A browser whose storage is full: the message is still shown and will be
	// sent, and the page says it would not survive a reload.
	run(t, ctx, "fill localStorage", chromedp.Evaluate[chromedp.Void](`(() => {
		const chunk = "x".repeat(256 * 1024); let i = 0;
		try { for (;;) localStorage.setItem("fill-" + i++, chunk); } catch {}
		for (const n of [65536, 4096, 256, 16, 1]) { try { for (;;) localStorage.setItem("fill-" + i++, "x".repeat(n)); } catch {} }
	})()`))
	send(t, ctx, "typed with the storage full")
	until(t, ctx, "the page says the message would not survive", `(() => { const b = document.querySelector("[data-unsaved]");
		return !!b && b.textContent.includes("could not be kept") && [...document.querySelectorAll(".msg.user .bubble")].some(e => e.textContent === "typed with the storage full"); })()`)
	run(t, ctx, "free the storage", chromedp.Evaluate[chromedp.Void](`Object.keys(localStorage).filter(k => k.startsWith("fill-")).forEach(k => localStorage.removeItem(k))`))
}
