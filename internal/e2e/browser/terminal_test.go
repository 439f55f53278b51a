//go:build e2e

package browser

import (
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"

	"github.com/chromedp/chromedp"
)

// typeInto focuses sel and types text as a phone's keyboard does (input
// events, no key codes). chromedp's SendKeys sends each key's char event even
// after its keydown was handled and cancelled, which no browser does: xterm.js
// takes such a letter twice.
func typeInto(sel, text string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(chromedp.Focus(chromedp.CSS(sel)), chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, input.InsertText, input.InsertTextParams{Text: text})
		return err
	}))
}

// termShows is the JS for "xterm.js draws text in the terminal view".
func termShows(text string) string {
	return fmt.Sprintf(`((document.querySelector('[data-terminal] .xterm-rows')||{}).textContent||"").includes(%s)`, js(text))
}

// The real Claude Code's terminal UI in tmux (claude-tmux), live in the
// browser: the Terminal tab draws the pane with the conversation in it.
// Keys go nowhere until typing is switched on, which warns that they bypass
// receipts; then what is typed reaches the pane and shows there.
func TestTerminalTabShowsThePane(t *testing.T) {
	r := newRigAgents(t, nil, "", "claude-tmux:tmux")
	ctx := browser(t, 1440, 900)
	run(t, ctx, "log in", chromedp.Navigate(r.LoginURL()), chromedp.WaitVisible(chromedp.CSS(`form.newthread textarea`)))
	until(t, ctx, "claude-tmux is offered", `[...document.querySelectorAll("form.newthread select option")].some(o => o.value === "claude-tmux") && document.querySelector("form.newthread input[type=text]").value !== ""`)
	run(t, ctx, "choose claude-tmux", chromedp.Evaluate[chromedp.Void](`(() => {
		const sel = document.querySelector("form.newthread select"); sel.value = "claude-tmux"; sel.dispatchEvent(new Event("change", {bubbles: true}));
	})()`))
	until(t, ctx, "the form holds it", `document.querySelector("form.newthread select").value === "claude-tmux"`)
	run(t, ctx, "start", chromedp.SendKeys(chromedp.CSS(`form.newthread textarea`), PromptEcho), click(chromedp.CSS(`form.newthread button[type=submit]`)))
	until(t, ctx, "the answer in the chat", pageHas("You said it."))

	run(t, ctx, "open the Terminal tab", click(chromedp.CSS(`.thread-tabs [data-tab=terminal]`)))
	until(t, ctx, "the pane's conversation drawn by xterm.js", termShows("You said it.")+" && "+termShows(PromptEcho))
	if got := eval[string](t, ctx, `document.querySelector('[data-term-state]').dataset.termState`); got != "live" {
		t.Errorf("terminal state %q, want live", got)
	}
	shot(t, ctx, "desktop-terminal")

	const ignored, typed = "keys while read only", "keys typed in the browser"
	run(t, ctx, "type while typing is off", typeInto(`[data-terminal] textarea`, ignored))
	if eval[bool](t, ctx, `!!document.querySelector('[data-typing-warning]')`) {
		t.Error("the typing warning shows before typing is switched on")
	}
	run(t, ctx, "switch typing on", click(chromedp.CSS(`[data-typing]`)))
	until(t, ctx, "the warning says keys bypass receipts", `(document.querySelector('[data-typing-warning]')||{textContent:""}).textContent.includes("bypass parley's queue and receipts") && document.querySelector('[data-typing]').getAttribute("aria-pressed") === "true"`)
	run(t, ctx, "type", typeInto(`[data-terminal] textarea`, typed))
	until(t, ctx, "the typed keys show in the pane", termShows(typed))
	if eval[bool](t, ctx, termShows(ignored)) {
		t.Errorf("keys typed while typing was off reached the pane")
	}
	if bad := eval[[]string](t, ctx, unnamedControls(".thread-tabs, .review")); len(bad) > 0 {
		t.Errorf("controls without a name: %v", bad)
	}
}
