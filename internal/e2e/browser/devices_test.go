//go:build e2e

package browser

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/parleyhq/parley/internal/testkit"
)

// The devices page turns a device's optional pushes (a finished turn, an
// error) on and off, as PATCH /api/devices/{id} does: off by default, the box
// ticked in the page is what the API then lists.
func TestDevicesPageTurnsOptionalPushesOn(t *testing.T) {
	r := newRig(t)
	ctx := browser(t, 1280, 900)
	run(t, ctx, "sign in", chromedp.Navigate(r.LoginURL()))
	until(t, ctx, "the Devices section", `!!document.querySelector("details.devices")`)
	run(t, ctx, "open Devices", click(chromedp.CSS(`details.devices > summary`)))
	until(t, ctx, "this device listed, its pushes off", `(() => { const li = [...document.querySelectorAll(".device-list li")].find(l => l.textContent.includes("(this device)"));
		return !!li && !li.querySelector(".push-turns").checked && !li.querySelector(".push-errors").checked; })()`)
	run(t, ctx, "tick finished turns", click(chromedp.CSS(`.device-list li .push-turns`)))
	var list struct {
		Devices []struct {
			Current    bool
			PushTurns  bool `json:"push_turns"`
			PushErrors bool `json:"push_errors"`
		}
	}
	// The page sent the change; the API lists it once it is saved.
	testkit.Eventually(t, wait, func() bool {
		r.rest(t, "GET", "/api/devices", nil, &list)
		return len(list.Devices) == 1 && list.Devices[0].PushTurns
	}, "the API lists the device's turn pushes on")
	if list.Devices[0].PushErrors || !eval[bool](t, ctx, `document.querySelector(".device-list li .push-turns").checked`) {
		t.Fatalf("after ticking finished turns the API lists %+v", list.Devices)
	}
}
