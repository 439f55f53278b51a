//go:build e2e

package browser

import (
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestFileLimitIsTheServers: the composer's limit for attached files follows
// the daemon's limits.max_message_bytes (from the config event), not a
// constant: a 2 MiB file is attached when the daemon takes 4 MiB messages, and
// one over that budget is refused naming it.
func TestFileLimitIsTheServers(t *testing.T) {
	r := newRigWith(t, nil, "[limits]\nmax_message_bytes = 4194304\n")
	ctx := browser(t, 1280, 860)
	run(t, ctx, "sign in", chromedp.Navigate(r.LoginURL()), chromedp.WaitVisible(chromedp.CSS(`.side`)))
	startThread(t, ctx, PromptEcho+" a thread to attach files to")
	until(t, ctx, "the limit came with the config event", `window.parley.state.maxMessageBytes === 4194304`)
	drop := func(name string, size int) {
		run(t, ctx, "drop "+name, chromedp.Evaluate[chromedp.Void](`(() => {
			const dt = new DataTransfer(); dt.items.add(new File([new Uint8Array(`+strconv.Itoa(size)+`)], `+js(name)+`, { type: "text/plain" }));
			document.querySelector("form.composer").dispatchEvent(new DragEvent("drop", { dataTransfer: dt, bubbles: true, cancelable: true }));
		})()`))
	}
	drop("survey.txt", 2<<20)
	until(t, ctx, "the 2 MiB file is attached", `(() => { const f = document.querySelector(".attached .thumb .fname");
		return !!f && f.textContent === "survey.txt" && !document.querySelector(".attached [role=alert]"); })()`)
	drop("atlas.txt", 3<<20)
	until(t, ctx, "a file past the server's budget is refused, naming it", `(() => { const e = document.querySelector(".attached [role=alert]");
		return !!e && e.textContent.includes("atlas.txt") && e.textContent.includes("at most"); })()`)
}
