//go:build e2e

package browser

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

// draftShown is the JS for "the provisional text shows text, apart from the
// answer, italic and dimmed, inside the screen's width, and only finals
// final answers (earlier ones) have it".
func draftShown(text string, finals int) string {
	return fmt.Sprintf(`(() => { const d = document.querySelector(".msg.agent.draft");
		if (!d || !d.innerText.includes(%s)) return false;
		const st = getComputedStyle(d);
		const final = [...document.querySelectorAll(".msg.agent:not(.draft)")].filter(m => m.innerText.includes(%s)).length;
		return st.fontStyle === "italic" && Number(st.opacity) < 1 && d.innerText.includes("provisional") && final === %d
			&& d.getBoundingClientRect().right <= document.documentElement.clientWidth; })()`, js(text), js(text), finals)
}

// finalShown is the JS for "the final answer holds text and no provisional text is left".
func finalShown(text string) string {
	return fmt.Sprintf(`!document.querySelector(".msg.agent.draft") && [...document.querySelectorAll(".msg.agent:not(.draft)")].some(m => m.innerText.includes(%s))`, js(text))
}

// heldDrafts makes the rig's model answer PromptDraft twice, each time held
// half way until its gate opens: while it is held, the page can show only
// provisional text (no final words exist yet), whatever the machine's load.
func heldDrafts(t *testing.T, r *rig) (first, second *claudeapi.Gate) {
	first, second = claudeapi.NewGate(15), claudeapi.NewGate(15) // 15 of 30 pieces: the first line and more
	t.Cleanup(first.Open)
	t.Cleanup(second.Open)
	sc := Scenario(r.work)
	held := func(g *claudeapi.Gate) claudeapi.Rule {
		return claudeapi.Rule{Match: claudeapi.Match{Exact: PromptDraft}, Times: 1,
			Reply: claudeapi.Held(claudeapi.Text(DraftAnswer, 30, 50*time.Millisecond), g)}
	}
	sc.Rules = append([]claudeapi.Rule{held(first), held(second)}, sc.Rules...)
	r.api.SetScenario(sc)
	return first, second
}

// The real Claude Code TUI in tmux (claude-tmux) answering slowly: the page
// shows its words as the pane draws them, provisional (italic, dimmed, said
// so), then the final words in their place; a reload shows only the final
// words; on the phone too. The model holds each answer half way until the
// page showed it provisional.
func TestDashboardShowsProvisionalText(t *testing.T) {
	r := newRigAgents(t, nil, "", "claude-tmux:tmux")
	deskGate, phoneGate := heldDrafts(t, r)
	ctx := browser(t, 1280, 860)
	run(t, ctx, "log in", chromedp.Navigate(r.LoginURL()), chromedp.WaitVisible(chromedp.CSS(`form.newthread textarea`)))
	until(t, ctx, "claude-tmux is offered", `[...document.querySelectorAll("form.newthread select option")].some(o => o.value === "claude-tmux") && document.querySelector("form.newthread input[type=text]").value !== ""`)
	run(t, ctx, "choose claude-tmux in the work folder", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
		const f = document.querySelector("form.newthread");
		const sel = f.querySelector("select"); sel.value = "claude-tmux"; sel.dispatchEvent(new Event("change", {bubbles: true}));
		const dir = f.querySelector("input[type=text]"); dir.value = %s; dir.dispatchEvent(new Event("input", {bubbles: true}));
	})()`, js(r.work))))
	until(t, ctx, "the form holds the choices", fmt.Sprintf(`document.querySelector("form.newthread select").value === "claude-tmux" && document.querySelector("form.newthread input[type=text]").value === %s`, js(r.work)))
	run(t, ctx, "start", chromedp.SendKeys(chromedp.CSS(`form.newthread textarea`), PromptDraft), click(chromedp.CSS(`form.newthread button[type=submit]`)))
	until(t, ctx, "the chat opens", `location.hash.startsWith("#/c/")`)

	first := strings.SplitN(DraftAnswer, "\n", 2)[0]
	last := DraftAnswer[strings.LastIndex(DraftAnswer, "\n")+1:]
	until(t, ctx, "the first line shows as provisional text before the final words", draftShown(first, 0))
	shot(t, ctx, "desktop-provisional-text")
	deskGate.Open()
	until(t, ctx, "the final words replace it", finalShown(last))
	if n := eval[int](t, ctx, fmt.Sprintf(`[...document.querySelectorAll(".msg.agent")].filter(m => m.innerText.includes(%s)).length`, js(first))); n != 1 {
		t.Errorf("the first line shows %d times, want once (the final words only)", n)
	}

	chatID := strings.TrimPrefix(eval[string](t, ctx, `location.hash`), "#/c/")
	run(t, ctx, "reload", chromedp.Reload())
	until(t, ctx, "after the reload, the final words and no provisional text", finalShown(last))

	// The phone, the same thread: a second slow answer.
	phone := browser(t, 390, 844)
	run(t, phone, "log in on the phone at the chat", chromedp.Navigate(r.LoginURL()+"#/c/"+chatID), chromedp.WaitVisible(chromedp.CSS(`textarea[aria-label=Message]`)))
	until(t, phone, "the phone shows the first answer", finalShown(last))
	send(t, phone, PromptDraft)
	until(t, phone, "the phone shows provisional text, inside the screen", draftShown(first, 1))
	shot(t, phone, "phone-provisional-text")
	phoneGate.Open()
	until(t, phone, "the final words replace it on the phone", fmt.Sprintf(`!document.querySelector(".msg.agent.draft") && [...document.querySelectorAll(".msg.agent")].filter(m => m.innerText.includes(%s)).length === 2`, js(last)))
}
