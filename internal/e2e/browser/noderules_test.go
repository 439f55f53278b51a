//go:build e2e

package browser

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/parleyhq/parley/internal/testkit"
)

// rulesOf is machine's rules as its own API lists them.
func (r *rig) rulesOf(t *testing.T) []listedRuleBy {
	var out struct {
		Rules []listedRuleBy `json:"rules"`
	}
	r.rest(t, "GET", "/api/rules", nil, &out)
	return out.Rules
}

type listedRuleBy struct {
	listedRule
	CreatedBy string `json:"created_by"`
}

// At the hub's dashboard, a permission card of a thread on machine b offers
// "Make a rule…": the rule is proposed for b and made on b (b lists it, the
// hub's own rules stay empty), the card is allowed, and b's next such card
// is answered by it, shown "by rule 1" at the hub. The Rules view picks the
// machine whose rules it shows: b's rule listed, one added, tested and
// removed there, the hub's own list empty; on a 390×844 phone the selector
// and b's rules fit, and Make a rule on b's Write card makes it on b. With b
// stopped, a rule for it is refused saying so.
func TestTheHubMakesRulesForAnotherMachine(t *testing.T) {
	hub, b := hubAndNode(t)
	ctx := browser(t, 1280, 900)
	run(t, ctx, "log in at the hub", chromedp.Navigate(hub.LoginURL()+"#/new"), chromedp.WaitVisible(chromedp.CSS(`form.newthread select[name=machine]`)))
	until(t, ctx, "both machines offered", `[...document.querySelectorAll("form.newthread select[name=machine] option")].map(o => o.value).join(",") === "hub,b"`)
	run(t, ctx, "pick machine b", chromedp.SetValue(chromedp.CSS(`form.newthread select[name=machine]`), "b"))
	until(t, ctx, "b's folder", `document.querySelector("form.newthread input[type=text]").value === `+js(b.work))
	run(t, ctx, "start a thread on b that runs a command",
		chromedp.SendKeys(chromedp.CSS(`form.newthread textarea`), PromptBash),
		click(chromedp.CSS(`form.newthread button[type=submit]`)))

	// Make a rule on b's card.
	until(t, ctx, "b's permission card offers a rule", `!!document.querySelector(".card.perm[data-state=open] button.make-rule")`)
	run(t, ctx, "make a rule", click(chromedp.CSS(`.card.perm[data-state=open] button.make-rule`)))
	until(t, ctx, "the rule proposed for machine b", `document.querySelector('input[aria-label="Proposed rule command"]').value === "touch *" &&
		document.querySelector("form.make-rule-form").dataset.machine === "b" && document.querySelector("form.make-rule-form").innerText.includes("A rule of machine b")`)
	run(t, ctx, "save it", click(chromedp.CSS(`form.make-rule-form button[type=submit]`)))
	until(t, ctx, "the card is allowed and the tool ran on b", pageHas(ToolFollowUp))
	onB := b.rulesOf(t)
	if len(onB) != 1 || onB[0].Command != "touch *" || onB[0].Tool != "Bash" || onB[0].Agent != "claude" || !strings.HasSuffix(onB[0].CreatedBy, " at hub") {
		t.Fatalf("b's own rules: %+v, want the rule made from the card at the hub", onB)
	}
	if own := hub.rules(t); len(own) != 0 {
		t.Fatalf("the hub's own rules: %+v, want none (the rule is b's)", own)
	}
	send(t, ctx, PromptBash)
	until(t, ctx, "b's next card is answered by the rule", `[...document.querySelectorAll(".card.perm")].length === 2 &&
		[...document.querySelectorAll(".card.perm")].pop().dataset.state === "resolved" &&
		[...document.querySelectorAll(".card.perm")].pop().innerText.includes("by rule 1")`)

	// The Rules view's machine selector.
	run(t, ctx, "open Rules", click(chromedp.CSS(`details.rules > summary`)))
	sel := chromedp.CSS(`select[aria-label="Rules of machine"]`)
	until(t, ctx, "the machines offered, this one first", `[...document.querySelectorAll('select[aria-label="Rules of machine"] option')].map(o => o.value).join(",") === "hub,b" &&
		document.querySelector(".rule-list").innerText.includes("No rules")`)
	run(t, ctx, "pick b", chromedp.SetValue(sel, "b"))
	until(t, ctx, "b's rule listed", `(document.querySelector(".rule-list li[data-rule='1'] .rule-text")||{textContent:""}).textContent === 'allow agent=claude tool=Bash "touch *"'`)
	run(t, ctx, "add a rule on b",
		fill(`New rule command`, "ls *"),
		fill(`New rule tool`, "Bash"),
		click(chromedp.CSS(`form.rule-add button[type=submit]`)))
	until(t, ctx, "b's rule 2 listed", `(document.querySelector(".rule-list li[data-rule='2'] .rule-text")||{textContent:""}).textContent === 'allow tool=Bash "ls *"'`)
	if onB := b.rulesOf(t); len(onB) != 2 || onB[1].Command != "ls *" {
		t.Fatalf("b's own rules: %+v, want the one added at the hub second", onB)
	}
	run(t, ctx, "test b's rules",
		fill(`Test agent`, "claude"),
		fill(`Test command`, "touch x"),
		click(chromedp.CSS(`form.rule-test button[type=submit]`)))
	until(t, ctx, "allowed by b's rule 1", `(document.querySelector(".rule-answer")||{textContent:""}).textContent.startsWith("allow by rule 1")`)
	run(t, ctx, "accept the confirm", chromedp.Evaluate[chromedp.Void](`window.confirm = () => true`))
	run(t, ctx, "remove b's rule 2", click(chromedp.CSS(`button[aria-label="Remove rule 2"]`)))
	testkit.Eventually(t, wait, func() bool { return len(b.rulesOf(t)) == 1 }, "b's rule 2 removed")
	run(t, ctx, "back to the hub's own", chromedp.SetValue(sel, "hub"))
	until(t, ctx, "the hub's own rules: none", `document.querySelector(".rule-list").innerText.includes("No rules")`)

	// The phone: the selector and b's rules fit its screen.
	phone := newTab(t, ctx)
	fits := `document.documentElement.scrollWidth <= window.innerWidth`
	run(t, phone, "phone", phoneViewport(), chromedp.Navigate(hub.Base))
	until(t, phone, "the Rules section", `!!document.querySelector("details.rules")`)
	run(t, phone, "phone: open Rules", click(chromedp.CSS(`details.rules > summary`)))
	until(t, phone, "phone: the selector", `document.querySelectorAll('select[aria-label="Rules of machine"] option').length === 2`)
	run(t, phone, "phone: pick b", chromedp.SetValue(sel, "b"))
	until(t, phone, "phone: b's rule listed, within the screen", `(document.querySelector(".rule-list li[data-rule='1'] .rule-text")||{textContent:""}).textContent.includes('"touch *"') && `+fits+
		` && document.querySelector('select[aria-label="Rules of machine"]').getBoundingClientRect().right <= window.innerWidth`)
	shot(t, phone, "phone-rules-machine")

	// The phone: Make a rule on b's Write card makes it on b.
	run(t, phone, "phone: b's thread", chromedp.Navigate(hub.Base+"/#/"), chromedp.WaitVisible(chromedp.CSS(`.p-thread[data-machine=b]`)),
		click(chromedp.CSS(`.p-thread[data-machine=b]`)))
	until(t, phone, "phone: b's chat", `!!document.querySelector(".p-chat") && `+pageHas(ToolFollowUp))
	send(t, phone, PromptWrite)
	until(t, phone, "phone: b's Write card offers a rule", `!!document.querySelector(".card.perm[data-state=open] button.make-rule")`)
	run(t, phone, "phone: make a rule", click(chromedp.CSS(`.card.perm[data-state=open] button.make-rule`)))
	until(t, phone, "phone: the rule proposed for b, within the screen", `document.querySelector("form.make-rule-form").dataset.machine === "b" &&
		document.querySelector('input[aria-label="Proposed rule tool"]').value === "Write" && `+fits+
		` && document.querySelector("form.make-rule-form").getBoundingClientRect().right <= window.innerWidth`)
	run(t, phone, "phone: save it", click(chromedp.CSS(`form.make-rule-form button[type=submit]`)))
	until(t, phone, "phone: the card allowed, the file written on b", pageHas("Written."))
	if onB := b.rulesOf(t); len(onB) != 2 || onB[1].Tool != "Write" || !strings.HasSuffix(onB[1].CreatedBy, " at hub") {
		t.Fatalf("b's own rules after the phone's: %+v, want the Write rule made at the hub second", onB)
	}

	// b stopped: a rule for it is refused, saying so, and b keeps its one.
	b.stop()
	run(t, ctx, "add a rule on b while it is away",
		chromedp.SetValue(sel, "b"),
		fill(`New rule command`, "make *"),
		fill(`New rule tool`, "Bash"),
		click(chromedp.CSS(`form.rule-add button[type=submit]`)))
	until(t, ctx, "the refusal names b", `(document.querySelector("details.rules [role=alert]")||{textContent:""}).textContent.includes("machine b does not answer")`)
	if own := hub.rules(t); len(own) != 0 {
		t.Fatalf("the hub's own rules after the refusal: %+v", own)
	}
}
