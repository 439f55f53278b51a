//go:build e2e

package browser

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/parleyhq/parley/internal/testkit"
)

// parleyCmd runs the parley under test with r's config and data folder.
func (r *rig) parleyCmd(t testing.TB, args ...string) string {
	t.Helper()
	cmd := exec.Command(testkit.ParleyBinary(t), append(args, "--config", filepath.Join(r.dir, "config.toml"), "--data", filepath.Join(r.dir, "data"))...)
	cmd.Dir = r.work
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("parley %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr)
	}
	return string(out)
}

// hubAndNode starts a hub ("hub", a cluster listener on loopback) and a
// machine "b" joined to it (with bAgents beside Claude Code, as newRigAgents
// names them), each a real `parley serve` with its own data
// folder, config and Claude Code, and waits until the hub has b online.
func hubAndNode(t *testing.T, bAgents ...string) (hub, b *rig) {
	t.Helper()
	hub = newRigWith(t, nil, "\n[cluster]\nlisten = \"127.0.0.1:0\"\nnode = \"hub\"\n")
	line := strings.TrimSpace(hub.parleyCmd(t, "join-token", "--name", "b"))
	tok, ok := strings.CutPrefix(line, "parley join ")
	if !ok {
		t.Fatalf("parley join-token printed %q", line)
	}
	b = newRigAgents(t, func(dataDir, _ string) {
		r := &rig{dir: filepath.Dir(dataDir), work: filepath.Join(filepath.Dir(dataDir), "work")}
		r.parleyCmd(t, "join", tok, "--node", "b")
	}, "", bAgents...)
	var nodes struct {
		Nodes []struct {
			Name   string `json:"name"`
			Online bool   `json:"online"`
		} `json:"nodes"`
	}
	testkit.Eventually(t, wait, func() bool {
		hub.rest(t, "GET", "/api/nodes", nil, &nodes)
		return len(nodes.Nodes) == 1 && nodes.Nodes[0].Name == "b" && nodes.Nodes[0].Online
	}, "b online at the hub")
	return hub, b
}

// At the hub's dashboard a person picks machine b, then its agent and its
// folder, starts a thread that runs on b, and sees b named in the thread
// list and the chat's header; the Machines view shows b online, then
// offline once b stops, and b's thread then reads from the hub's copy,
// saying so. The phone layout holds each of these.
func TestTheHubsDashboardStartsAThreadOnAnotherMachine(t *testing.T) {
	hub, b := hubAndNode(t)
	ctx := browser(t, 1280, 900)
	run(t, ctx, "log in at the hub", chromedp.Navigate(hub.LoginURL()+"#/new"), chromedp.WaitVisible(chromedp.CSS(`form.newthread select[name=machine]`)))
	until(t, ctx, "both machines offered", `[...document.querySelectorAll("form.newthread select[name=machine] option")].map(o => o.value).join(",") === "hub,b"`)
	until(t, ctx, "the hub's own machine is picked first, with its folder", `document.querySelector("form.newthread select[name=machine]").value === "hub" && document.querySelector("form.newthread input[type=text]").value === `+js(hub.work))
	run(t, ctx, "pick machine b", chromedp.SetValue(chromedp.CSS(`form.newthread select[name=machine]`), "b"))
	until(t, ctx, "b's agent and b's folder", `document.querySelector("form.newthread select[name=agent]").value === "claude" && document.querySelector("form.newthread input[type=text]").value === `+js(b.work))
	text := PromptEcho + " from the hub's dashboard"
	run(t, ctx, "start the thread on b",
		chromedp.SendKeys(chromedp.CSS(`form.newthread textarea`), text),
		click(chromedp.CSS(`form.newthread button[type=submit]`)))
	until(t, ctx, "the reply from b's agent", pageHas("You said it."))

	// The thread is b's: in b's own store, in b's folder.
	var onB struct {
		Threads []struct {
			ID  string `json:"id"`
			Cwd string `json:"cwd"`
		} `json:"threads"`
	}
	b.rest(t, "GET", "/api/threads", nil, &onB)
	if len(onB.Threads) != 1 || onB.Threads[0].Cwd != b.work {
		t.Fatalf("b's own threads: %+v, want the one started at the hub, in %s", onB.Threads, b.work)
	}
	remoteID := onB.Threads[0].ID + "@b"
	until(t, ctx, "the thread list names machine b", `(() => { const e = [...document.querySelectorAll(".side button.thread")].find(e => e.dataset.thread === `+js(remoteID)+`);
		return !!e && e.dataset.machine === "b" && e.querySelector(".t-meta").innerText.includes("b · claude"); })()`)
	until(t, ctx, "the chat's header names machine b", `(document.querySelector(".chat-head [data-thread-where]")||{innerText:""}).innerText.startsWith("b · claude")`)

	// A search at the hub finds the message in b's store; every machine
	// searched, so it names none as not searched.
	box := chromedp.CSS(`input[aria-label="Search threads"]`)
	run(t, ctx, "search at the hub", chromedp.SetValue(box, "from the hub's dashboard"))
	until(t, ctx, "the hit in b's thread", `!!document.querySelector('[data-hit-thread=`+js(remoteID)+`]') && !document.querySelector("[data-unsearched]")`)
	run(t, ctx, "clear the search", chromedp.Evaluate[chromedp.Void](`(() => { const el = document.querySelector('input[aria-label="Search threads"]'); el.value = ""; el.dispatchEvent(new Event("input", { bubbles: true })); })()`))

	// The machines view: b online, with its agent and its thread.
	run(t, ctx, "open Machines", click(chromedp.CSS(`details.machines summary`)))
	until(t, ctx, "b online with its agent and thread", `(() => { const e = document.querySelector("details.machines li[data-node=b]");
		return !!e && e.dataset.online === "true" && e.innerText.includes("online since") && e.innerText.includes("claude") && e.innerText.includes("1 thread"); })()`)

	// The phone at the hub: the picker, the list entry, the header and the
	// machines view each fit a 390 px screen.
	phone := newTab(t, ctx)
	fits := `document.documentElement.scrollWidth <= window.innerWidth`
	run(t, phone, "phone: the new-thread form", phoneViewport(), chromedp.Navigate(hub.Base+"/#/new"), chromedp.WaitVisible(chromedp.CSS(`form.newthread select[name=machine]`)))
	until(t, phone, "phone: the machine picker fits", fits+` && document.querySelector("form.newthread select[name=machine]").getBoundingClientRect().right <= window.innerWidth`)
	run(t, phone, "phone: the thread list", chromedp.Navigate(hub.Base+"/#/"), chromedp.WaitVisible(chromedp.CSS(`.p-thread[data-machine=b]`)))
	until(t, phone, "phone: the list entry names b and fits", fits+` && document.querySelector(".p-thread[data-machine=b] .t-meta").innerText.includes("b · claude")`)
	run(t, phone, "phone: open Machines", click(chromedp.CSS(`details.machines summary`)))
	until(t, phone, "phone: the machines view fits", fits+` && !!document.querySelector("details.machines li[data-node=b]") && document.querySelector("details.machines li[data-node=b]").getBoundingClientRect().right <= window.innerWidth`)
	run(t, phone, "phone: the thread", click(chromedp.CSS(`.p-thread[data-machine=b]`)))
	until(t, phone, "phone: the header names b and fits", fits+` && (document.querySelector(".p-bar [data-thread-where]")||{innerText:""}).innerText.startsWith("b · claude")`)

	// b stops: the open machines view says so, without a reload, and so do
	// b's agent in the side list and the new-thread form (on the phone, which
	// has no machines view open: the form reads the agents as it opens).
	// Both within 10 s: a later refresh for some other reason must not be
	// what makes them true.
	b.stop()
	until(t, ctx, "b offline in the machines view", `(() => { const e = document.querySelector("details.machines li[data-node=b]");
		return !!e && e.dataset.online === "false" && e.innerText.includes("offline since"); })()`)
	untilWithin(t, ctx, 10*time.Second, "b's agent says its machine is offline", `[...document.querySelectorAll(".side .agents li")].some(e => e.dataset.machine === "b" && e.innerText.includes("machine offline"))`)
	run(t, phone, "phone: the new-thread form", chromedp.Navigate(hub.Base+"/#/new"), chromedp.WaitVisible(chromedp.CSS(`form.newthread select[name=machine]`)))
	untilWithin(t, phone, 10*time.Second, "b offered as offline", `[...document.querySelectorAll("form.newthread select[name=machine] option")].some(o => o.value === "b" && o.textContent.includes("offline"))`)
	run(t, phone, "phone: pick b", chromedp.SetValue(chromedp.CSS(`form.newthread select[name=machine]`), "b"),
		chromedp.SendKeys(chromedp.CSS(`form.newthread textarea`), "anything"))
	until(t, phone, "Start refused while b is offline", `document.querySelector("form.newthread button[type=submit]").disabled && document.querySelector("form.newthread [role=status]").innerText.includes("offline")`)

	// With b away the hub's search cannot cover it, and says so with the
	// hits (here none): on the desktop and on the phone.
	unsearched := `(document.querySelector("[data-unsearched]")||{innerText:""}).innerText === "not searched: b (offline)" && !!document.querySelector("[data-search-empty]")`
	run(t, ctx, "search at the hub, b offline", chromedp.SetValue(box, "from the hub's dashboard"))
	until(t, ctx, "b named as not searched", unsearched)
	run(t, phone, "phone: the thread list", chromedp.Navigate(hub.Base+"/#/"), chromedp.WaitVisible(box))
	run(t, phone, "phone: search, b offline", chromedp.SetValue(box, "from the hub's dashboard"))
	until(t, phone, "phone: b named as not searched, within the screen", unsearched+` && `+fits+` && document.querySelector("[data-unsearched]").getBoundingClientRect().right <= window.innerWidth`)

	// With b away its thread still reads at the hub, from the hub's copy of
	// its recent events, and says so: on the desktop (a reload replays it)
	// and on the phone, within its screen.
	fromCopy := `(document.querySelector("[data-from-copy]")||{innerText:""}).innerText.startsWith("Machine b offline since")`
	run(t, ctx, "reload the chat on b's thread", chromedp.Reload())
	until(t, ctx, "b's conversation from the hub's copy, said so", pageHas("You said it.")+` && `+fromCopy)
	// (The phone's chat showed b's thread before b stopped: it reloads too.)
	run(t, phone, "phone: b's thread", chromedp.Evaluate[chromedp.Void](`(() => { const el = document.querySelector('input[aria-label="Search threads"]'); el.value = ""; el.dispatchEvent(new Event("input", { bubbles: true })); })()`),
		chromedp.WaitVisible(chromedp.CSS(`.p-thread[data-machine=b]`)), click(chromedp.CSS(`.p-thread[data-machine=b]`)), chromedp.Reload())
	until(t, phone, "phone: b's conversation from the hub's copy, said so within the screen", pageHas("You said it.")+` && `+fromCopy+` && `+fits+
		` && document.querySelector("[data-from-copy]").getBoundingClientRect().right <= window.innerWidth`)
}
