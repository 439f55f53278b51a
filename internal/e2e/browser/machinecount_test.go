//go:build e2e

package browser

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// The Machines view counts a machine's threads as the thread open on screen
// shows them (issue 28, item 14): the hub's own line counted the threads of
// its side list, so an archived thread, open and read, made the hub say
// "0 threads" while a node's line (counted from the directory) counted its
// archived ones. Desktop and phone.
func TestMachinesCountTheThreadOpenOnScreen(t *testing.T) {
	hub, _ := hubAndNode(t)
	ctx := browser(t, 1280, 900)
	run(t, ctx, "log in at the hub", chromedp.Navigate(hub.LoginURL()+"#/new"), chromedp.WaitVisible(chromedp.CSS(`form.newthread select[name=machine]`)))
	until(t, ctx, "the hub's own machine picked", `document.querySelector("form.newthread select[name=machine]").value === "hub"`)
	run(t, ctx, "start a thread on the hub",
		chromedp.SendKeys(chromedp.CSS(`form.newthread textarea`), PromptEcho+" on the hub"),
		click(chromedp.CSS(`form.newthread button[type=submit]`)))
	until(t, ctx, "the reply", pageHas("You said it."))
	run(t, ctx, "archive it", click(chromedp.CSS(`[data-action=archive]`)))
	until(t, ctx, "archived, still open", `!!document.querySelector("[data-archived-note]") && `+pageHas("You said it."))

	hubLine := `(document.querySelector("details.machines [data-hub-threads]")||{innerText:""}).innerText`
	run(t, ctx, "open Machines", click(chromedp.CSS(`details.machines summary`)))
	until(t, ctx, "the hub counts its thread open on screen", hubLine+`.endsWith("· 1 thread") && !!document.querySelector("details.machines li[data-node=b]")`)

	phone := newTab(t, ctx)
	run(t, phone, "phone: the archived thread", phoneViewport(), chromedp.Navigate(hub.Base+"/#/"), chromedp.WaitVisible(chromedp.CSS(`details.machines summary`)))
	run(t, phone, "phone: open Machines", click(chromedp.CSS(`details.machines summary`)))
	until(t, phone, "phone: the hub counts its archived thread, within the screen", hubLine+`.endsWith("· 1 thread") && document.querySelector("details.machines [data-hub-threads]").getBoundingClientRect().right <= window.innerWidth`)
}
