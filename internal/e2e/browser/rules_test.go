//go:build e2e

package browser

import (
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/parleyhq/parley/internal/testkit"
)

type listedRule struct {
	N       int    `json:"n"`
	ID      string `json:"id"`
	From    string `json:"from"`
	Agent   string `json:"agent"`
	Tool    string `json:"tool"`
	Command string `json:"command"`
}

// fill sets the input of that name as typing would (an input event).
func fill(label, text string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const el = document.querySelector('input[aria-label=%s]');
		el.value = %s; el.dispatchEvent(new Event("input", { bubbles: true })); })()`, js(label), js(text)))
}

func (r *rig) rules(t *testing.T) []listedRule {
	var out struct {
		Rules []listedRule `json:"rules"`
	}
	r.rest(t, "GET", "/api/rules", nil, &out)
	return out.Rules
}

// openRules signs a desktop browser in and opens the Rules view, empty.
func (r *rig) openRules(t *testing.T) context.Context {
	t.Helper()
	ctx := browser(t, 1280, 900)
	run(t, ctx, "sign in", chromedp.Navigate(r.LoginURL()))
	until(t, ctx, "the Rules section", `!!document.querySelector("details.rules")`)
	run(t, ctx, "open Rules", click(chromedp.CSS(`details.rules > summary`)))
	until(t, ctx, "no rules yet", `document.querySelector(".rule-list").innerText.includes("No rules")`)
	return ctx
}

// The Rules view adds, edits, tests and removes a rule, on the desktop; a
// permission card's "Make a rule…" proposes one from the call (Bash and the
// command's program), saves it while allowing the card once, and the next
// such card is answered by it with nobody asked; on the phone the same rule
// is listed, tested and revoked.
func TestRulesViewAndMakeARule(t *testing.T) {
	r := newRig(t)
	ctx := r.openRules(t)

	// A refused rule says why; a good one is listed as rule 1.
	run(t, ctx, "write a command that is not one simple command",
		chromedp.SendKeys(chromedp.CSS(`input[aria-label="New rule command"]`), "go test; rm -rf ~"),
		click(chromedp.CSS(`form.rule-add button[type=submit]`)))
	until(t, ctx, "the refusal is shown", `(document.querySelector("details.rules [role=alert]")||{textContent:""}).textContent.includes("one simple command")`)
	run(t, ctx, "write a good rule",
		fill(`New rule command`, "go test *"),
		chromedp.SendKeys(chromedp.CSS(`input[aria-label="New rule tool"]`), "Bash"),
		click(chromedp.CSS(`form.rule-add button[type=submit]`)))
	until(t, ctx, "rule 1 listed", `(document.querySelector(".rule-list li[data-rule='1'] .rule-text")||{textContent:""}).textContent === 'allow tool=Bash "go test *"'`)
	if got := r.rules(t); len(got) != 1 || got[0].Command != "go test *" || got[0].Tool != "Bash" {
		t.Fatalf("the API lists %+v, want the rule added", got)
	}
	run(t, ctx, "test a command",
		chromedp.SendKeys(chromedp.CSS(`input[aria-label="Test command"]`), "go test ./... && rm -rf x"),
		click(chromedp.CSS(`form.rule-test button[type=submit]`)))
	until(t, ctx, "a line with rm asks", `(document.querySelector(".rule-answer")||{textContent:""}).textContent.startsWith("ask")`)
	run(t, ctx, "edit rule 1", click(chromedp.CSS(`button[aria-label="Edit rule 1"]`)))
	run(t, ctx, "change its command",
		fill(`Rule 1 command`, "go vet *"),
		click(chromedp.CSS(`form.rule-edit button[type=submit]`)))
	until(t, ctx, "rule 1 changed", `(document.querySelector(".rule-list li[data-rule='1'] .rule-text")||{textContent:""}).textContent === 'allow tool=Bash "go vet *"'`)
	run(t, ctx, "accept the confirm", chromedp.Evaluate[chromedp.Void](`window.confirm = () => true`))
	run(t, ctx, "remove rule 1", click(chromedp.CSS(`button[aria-label="Remove rule 1"]`)))
	until(t, ctx, "no rules again", `document.querySelector(".rule-list").innerText.includes("No rules")`)
	if got := r.rules(t); len(got) != 0 {
		t.Fatalf("after removing, the API lists %+v", got)
	}

	// Make a rule from a card.
	startThread(t, ctx, PromptBash)
	until(t, ctx, "the permission card is open", `!!document.querySelector(".card.perm[data-state=open] button.make-rule")`)
	shot(t, ctx, "desktop-make-rule")
	run(t, ctx, "make a rule", click(chromedp.CSS(`.card.perm[data-state=open] button.make-rule`)))
	until(t, ctx, "the proposed rule", `document.querySelector('input[aria-label="Proposed rule command"]').value === "touch *" &&
		document.querySelector('input[aria-label="Proposed rule tool"]').value === "Bash"`)
	run(t, ctx, "save it", click(chromedp.CSS(`form.make-rule-form button[type=submit]`)))
	until(t, ctx, "the card is allowed and the tool ran", pageHas(ToolFollowUp))
	got := r.rules(t)
	if len(got) != 1 || got[0].Command != "touch *" || got[0].Tool != "Bash" || got[0].Agent != "claude" {
		t.Fatalf("the API lists %+v, want the rule made from the card", got)
	}
	send(t, ctx, PromptBash)
	until(t, ctx, "the next card is answered by the rule", `[...document.querySelectorAll(".card.perm")].length === 2 &&
		[...document.querySelectorAll(".card.perm")].pop().dataset.state === "resolved" &&
		[...document.querySelectorAll(".card.perm")].pop().innerText.includes("by rule 1")`)

	// The phone lists it, tests it, and revokes it.
	phone := newTab(t, ctx)
	run(t, phone, "phone", phoneViewport(), chromedp.Navigate(r.Base))
	until(t, phone, "the Rules section", `!!document.querySelector("details.rules")`)
	run(t, phone, "open Rules", click(chromedp.CSS(`details.rules > summary`)))
	until(t, phone, "the card's rule listed", `(document.querySelector(".rule-list li[data-rule='1'] .rule-text")||{textContent:""}).textContent.includes('"touch *"')`)
	run(t, phone, "test it",
		chromedp.SendKeys(chromedp.CSS(`input[aria-label="Test agent"]`), "claude"),
		chromedp.SendKeys(chromedp.CSS(`input[aria-label="Test command"]`), "touch x"),
		click(chromedp.CSS(`form.rule-test button[type=submit]`)))
	until(t, phone, "allowed by rule 1", `(document.querySelector(".rule-answer")||{textContent:""}).textContent.startsWith("allow by rule 1")`)
	if w := eval[int](t, phone, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("the phone's page is %d px wide with Rules open, want it to fit 390", w)
	}
	shot(t, phone, "phone-rules")
	run(t, phone, "accept the confirm", chromedp.Evaluate[chromedp.Void](`window.confirm = () => true`))
	run(t, phone, "revoke it", click(chromedp.CSS(`button[aria-label="Remove rule 1"]`)))
	testkit.Eventually(t, wait, func() bool { return len(r.rules(t)) == 0 }, "the rule revoked")
}
