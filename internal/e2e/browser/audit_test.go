//go:build e2e

package browser

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
)

// auditShown is the JS for the entries an Activity list labelled label
// shows, top to bottom: "kind|who|what" each.
func auditShown(label string) string {
	return fmt.Sprintf(`[...document.querySelectorAll('section.audit[aria-label=%s] li')].map(li => li.dataset.kind + "|" + li.querySelector(".audit-who").textContent + "|" + li.querySelector(".audit-what").textContent)`, js(label))
}

// A thread's Activity shows who did what in it, newest first, twenty at a
// time with "Older entries" for the rest, on the desktop and on a 390×844
// phone; the Devices view shows what each device did (its sign-in, its
// message). No entry shows a message's text, and every control is named.
func TestActivityPerThreadAndPerDevice(t *testing.T) {
	r := newRig(t)
	ctx := browser(t, 1280, 900)
	run(t, ctx, "sign in", chromedp.Navigate(r.LoginURL()))
	startThread(t, ctx, PromptEcho+" audited words")
	until(t, ctx, "the answer arrives", pageHas("You said it."))
	var list struct {
		Threads []struct {
			ID string `json:"id"`
		} `json:"threads"`
	}
	r.rest(t, "GET", "/api/threads", nil, &list)
	if len(list.Threads) != 1 {
		t.Fatalf("threads: %+v", list.Threads)
	}
	th := list.Threads[0].ID
	// Twenty-one more from the token (the CLI, as it were): queued at once.
	for i := 1; i <= 21; i++ {
		r.rest(t, "POST", "/api/threads/"+th+"/messages?wait=0s", map[string]string{"message_id": fmt.Sprintf("q%d", i), "text": PromptEcho + " again"}, nil)
	}

	run(t, ctx, "open the thread's activity", click(chromedp.CSS(`.chat-head [data-action=activity]`)))
	until(t, ctx, "the newest twenty, the token's last message first",
		auditShown("Thread activity")+`.length === 20 && `+auditShown("Thread activity")+`[0] === "message.sent|the token (CLI or a script)|message q21 sent"`)
	if !axNamed(t, ctx, "button", "Older entries") {
		t.Fatal("no Older entries button in the accessibility tree")
	}
	run(t, ctx, "page back", click(chromedp.CSS(`section.audit button`)))
	until(t, ctx, "all 22, the browser's own first message last",
		auditShown("Thread activity")+`.length === 22 && /^message\.sent\|.* \(device\)\|message .* sent$/.test(`+auditShown("Thread activity")+`[21])`)
	if eval[bool](t, ctx, `document.querySelector("section.audit").innerText.includes("audited words")`) {
		t.Fatal("the activity shows a message's text")
	}

	run(t, ctx, "open Devices", click(chromedp.CSS(`details.devices > summary`)))
	until(t, ctx, "this device listed", `[...document.querySelectorAll(".device-list li")].some(l => l.textContent.includes("(this device)"))`)
	run(t, ctx, "open this device's activity", chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll(".device-list li")].find(l => l.textContent.includes("(this device)")).querySelector("[data-device-activity]").click()`))
	until(t, ctx, "its sign-in and its message, newest first",
		`(() => { const s = [...document.querySelectorAll('.device-list section.audit li')].map(li => li.dataset.kind); return s.join() === "message.sent,signin"; })()`)
	axNamed(t, ctx, "", "")

	// On a phone: the thread's Manage → Activity.
	phone := browser(t, 390, 844)
	run(t, phone, "sign in on a phone", phoneViewport(), chromedp.Navigate(r.LoginURL()))
	run(t, phone, "open the thread", click(chromedp.CSS(`.p-thread`)))
	run(t, phone, "manage the thread", click(chromedp.CSS(`details.p-manage > summary`)))
	run(t, phone, "open its activity", click(chromedp.CSS(`details.p-manage [data-action=activity]`)))
	until(t, phone, "the newest twenty", auditShown("Thread activity")+`.length === 20`)
	if !axNamed(t, phone, "button", "Older entries") {
		t.Fatal("no Older entries button on the phone")
	}
	if w := eval[float64](t, phone, `document.querySelector("section.audit").getBoundingClientRect().right`); w > 390 {
		t.Fatalf("the activity runs off the phone's screen (right edge %.0f px)", w)
	}
}
