//go:build e2e

package browser

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// While a card waits for the person, the turn is theirs to move: the line
// under the conversation (and the desktop header) says "waiting for you", not
// "working… N s" counting up as if the agent were busy. Desktop and phone.
func TestWaitingForYouUnderAnOpenCard(t *testing.T) {
	r := newRig(t)
	ctx := browser(t, 1280, 860)
	run(t, ctx, "sign in", chromedp.Navigate(r.LoginURL()), chromedp.WaitVisible(chromedp.CSS(`.side`)))
	startThread(t, ctx, PromptWrite)
	card := `.card.perm[data-state=open] button.k-allow_once:enabled`
	until(t, ctx, "the Write card is open", `!!document.querySelector("`+card+`")`)
	waiting := `(() => { const w = document.querySelector(".conv .working.in-conv");
		return !!w && w.dataset.waiting === "permission" && w.textContent.startsWith("waiting for you") && !/\d+ s/.test(w.textContent); })()`
	until(t, ctx, "the line under the card says waiting for you", waiting)
	until(t, ctx, "the header says waiting for you", `(document.querySelector(".chat-head .working")||{}).textContent === "waiting for you"`)

	phone := browser(t, 390, 844)
	chatHash := eval[string](t, ctx, `location.hash`)
	run(t, phone, "open the chat on a phone", phoneViewport(), chromedp.Navigate(r.LoginURL()+chatHash))
	until(t, phone, "the phone shows the card", `!!document.querySelector("`+card+`")`)
	until(t, phone, "the phone says waiting for you", waiting)

	run(t, ctx, "allow once", click(chromedp.CSS(card)))
	until(t, ctx, "the write is answered", pageHas("Written."))
	until(t, ctx, "nothing says waiting any more", `!document.querySelector("[data-waiting]")`)
}

// A thread whose machine is away says so before anyone sends to it: its row
// and its chat say "machine offline since …" and that messages wait, on the
// desktop and the phone; the Machines view says "offline since …" without a
// "last seen just now" beside it.
func TestAnAwayMachineIsSaidInItsThread(t *testing.T) {
	hub, b := hubAndNode(t)
	ctx := browser(t, 1280, 900)
	run(t, ctx, "log in at the hub", chromedp.Navigate(hub.LoginURL()+"#/new"), chromedp.WaitVisible(chromedp.CSS(`form.newthread select[name=machine]`)))
	until(t, ctx, "both machines offered", `[...document.querySelectorAll("form.newthread select[name=machine] option")].length === 2`)
	run(t, ctx, "pick machine b", chromedp.SetValue(chromedp.CSS(`form.newthread select[name=machine]`), "b"))
	until(t, ctx, "b's folder", `document.querySelector("form.newthread input[type=text]").value === `+js(b.work))
	run(t, ctx, "start the thread on b",
		chromedp.SendKeys(chromedp.CSS(`form.newthread textarea`), PromptEcho+" on b"),
		click(chromedp.CSS(`form.newthread button[type=submit]`)))
	until(t, ctx, "the reply from b's agent", pageHas("You said it."))
	row := `(document.querySelector(".side button.thread[data-machine=b] .t-meta")||{innerText:""}).innerText`
	if got := eval[string](t, ctx, row); strings.Contains(got, "offline") {
		t.Fatalf("b's row says %q while b is online", got)
	}

	b.stop()
	away := `(() => { const e = document.querySelector("[data-away=b]"); return !!e && /^Machine b offline since .*Messages you send wait/.test(e.innerText); })()`
	until(t, ctx, "b's row says its machine is offline and messages wait", `/machine offline since .*, messages wait/.test(`+row+`)`)
	until(t, ctx, "the chat says so too", away)
	run(t, ctx, "open Machines", click(chromedp.CSS(`details.machines summary`)))
	until(t, ctx, "b offline since, and no last seen beside it", `(() => { const e = document.querySelector("details.machines li[data-node=b]");
		return !!e && e.innerText.includes("offline since") && !e.innerText.includes("last seen"); })()`)

	phone := newTab(t, ctx)
	fits := `document.documentElement.scrollWidth <= window.innerWidth`
	run(t, phone, "phone: the thread list", phoneViewport(), chromedp.Navigate(hub.Base+"/#/"), chromedp.WaitVisible(chromedp.CSS(`.p-thread[data-machine=b]`)))
	until(t, phone, "phone: b's row says so", `/machine offline since .*, messages wait/.test(document.querySelector(".p-thread[data-machine=b] .t-meta").innerText) && `+fits)
	run(t, phone, "phone: open b's thread", click(chromedp.CSS(`.p-thread[data-machine=b]`)))
	until(t, phone, "phone: the chat says so within the screen", away+` && `+fits+` && document.querySelector("[data-away=b]").getBoundingClientRect().right <= window.innerWidth`)
}
