//go:build e2e

package browser

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestManageThreads: search finds a message (a bad search says why) and its
// hit opens the thread at that message; rename shows at once here and in
// another tab; archive moves the thread to the archived list; delete says
// what happens to the agent's own session, then the other tab's view closes
// saying why. The phone layout (390×844) searches and renames too, without
// overflowing its width.
func TestManageThreads(t *testing.T) {
	r := newRigWith(t, func(dataDir, cwd string) {
		seedThread(t, dataDir, cwd, "c_seed_a", 300)
		seedThread(t, dataDir, cwd, "c_seed_b", 12)
	}, "[limits]\nreplay_tail = 5000\n")
	ctx := browser(t, 1280, 860)
	run(t, ctx, "sign in", chromedp.Navigate(r.LoginURL()), chromedp.WaitVisible(chromedp.CSS(`.side`)))
	until(t, ctx, "both seeded threads are listed", `!!document.querySelector("[data-thread=t_seed_c_seed_a]") && !!document.querySelector("[data-thread=t_seed_c_seed_b]")`)
	box := chromedp.CSS(`input[aria-label="Search threads"]`)

	t.Run("search, and a hit opens the thread at the message", func(t *testing.T) {
		run(t, ctx, "search a bad query", chromedp.SetValue(box, `" *`))
		until(t, ctx, "the search says why", `(document.querySelector("[data-search-error]")||{textContent:""}).textContent.includes("word")`)
		run(t, ctx, "search a phrase", chromedp.SetValue(box, `"question number 7"`))
		// seedThread's turn i starts at seq 6i+1: question 7 is seq 43, far above the end of 300 events.
		until(t, ctx, "the message is found", `!!document.querySelector(".hits [data-hit-thread=t_seed_c_seed_a][data-hit-seq='43']")`)
		run(t, ctx, "open the hit", click(chromedp.CSS(`.hits [data-hit-seq='43']`)))
		until(t, ctx, "the thread opens at the message", `(() => {
			const m = document.querySelector(".msg.user.found[data-message=m_seed_7]");
			if (!m || document.querySelector("[data-thread-title]").textContent !== "seeded c_seed_a") return false;
			const b = m.getBoundingClientRect(), s = document.querySelector(".scroll").getBoundingClientRect();
			return b.bottom > s.top && b.top < s.bottom; })()`)
		run(t, ctx, "clear the search", chromedp.Evaluate[chromedp.Void](`(() => { const el = document.querySelector('input[aria-label="Search threads"]'); el.value = ""; el.dispatchEvent(new Event("input", { bubbles: true })); })()`))
		until(t, ctx, "the list is back", `!document.querySelector(".hits") && !!document.querySelector("[data-thread=t_seed_c_seed_b]")`)
	})

	other := newTab(t, ctx)
	run(t, other, "another tab on the same chat", chromedp.Navigate(r.Base+"/#/c/c_seed_a"), chromedp.WaitVisible(chromedp.CSS(`[data-thread-title]`)))
	until(t, other, "the other tab shows the thread", `document.querySelector("[data-thread-title]").textContent === "seeded c_seed_a"`)

	t.Run("rename, live in the other tab; a blank title is refused", func(t *testing.T) {
		run(t, ctx, "rename to blank", click(chromedp.CSS(`[data-action=rename]`)), chromedp.SetValue(chromedp.CSS(`input[aria-label="Thread title"]`), "   "),
			click(chromedp.CSS(`form.rename button[type=submit]`)))
		until(t, ctx, "the refusal says why", `(document.querySelector("[data-action-error]")||{textContent:""}).textContent.includes("empty")`)
		run(t, ctx, "rename", chromedp.SetValue(chromedp.CSS(`input[aria-label="Thread title"]`), "Heron survey"), click(chromedp.CSS(`form.rename button[type=submit]`)))
		until(t, ctx, "the header has the new title", `document.querySelector("[data-thread-title]").textContent === "Heron survey"`)
		until(t, ctx, "the list has it", `document.querySelector("[data-thread=t_seed_c_seed_a] .t-title").textContent.includes("Heron survey")`)
		until(t, other, "the other tab has it, live", `document.querySelector("[data-thread-title]").textContent === "Heron survey"`)
		shot(t, ctx, "desktop-thread-renamed")
	})

	t.Run("archive hides it from the list, still readable", func(t *testing.T) {
		run(t, ctx, "archive", click(chromedp.CSS(`[data-action=archive]`)))
		until(t, ctx, "gone from the list", `!document.querySelector("[data-thread=t_seed_c_seed_a]") && !!document.querySelector("[data-archived-note]")`)
		run(t, ctx, "show the archived threads", click(chromedp.CSS(`[data-show-archived]`)))
		until(t, ctx, "it is in the archived list", `!!document.querySelector("[data-archived-thread=t_seed_c_seed_a]")`)
		until(t, ctx, "its messages still show", `!!document.querySelector("[data-message=m_seed_7]")`)
		until(t, other, "the other tab says it is archived", `!!document.querySelector("[data-archived-note]")`)
	})

	t.Run("delete says what happens to the agent's session and closes the other view", func(t *testing.T) {
		run(t, ctx, "ask to delete", click(chromedp.CSS(`[data-action=delete]`)))
		until(t, ctx, "the confirmation says the session file stays", `(document.querySelector("[data-confirm-delete]")||{textContent:""}).textContent.includes("left on disk")`)
		shot(t, ctx, "desktop-thread-delete")
		run(t, ctx, "delete", click(chromedp.CSS(`[data-confirm=delete]`)))
		until(t, ctx, "back home, the thread gone", `location.hash === "#/" && !document.querySelector("[data-archived-thread=t_seed_c_seed_a]")`)
		until(t, other, "the other tab says it was deleted", `(document.querySelector("[data-gone]")||{textContent:""}).textContent.includes("deleted") && !document.querySelector("[data-message=m_seed_7]")`)
		if code := r.call(t, "GET", "/api/threads/t_seed_c_seed_a", r.Token, nil, nil); code != http.StatusNotFound {
			t.Errorf("the deleted thread reads: %d, want 404", code)
		}
	})

	t.Run("phone 390x844: search and rename", func(t *testing.T) {
		ph := browser(t, 390, 844)
		run(t, ph, "sign in on a phone", phoneViewport(), chromedp.Navigate(r.LoginURL()), chromedp.WaitVisible(chromedp.CSS(`.phone`)))
		noOverflow := `document.documentElement.scrollWidth <= window.innerWidth`
		run(t, ph, "search", chromedp.SetValue(box, "question number 1"))
		until(t, ph, "a hit in the other thread", `!!document.querySelector(".hits [data-hit-thread=t_seed_c_seed_b]")`)
		until(t, ph, "nothing wider than the screen", noOverflow)
		shot(t, ph, "phone-thread-search")
		run(t, ph, "open it", click(chromedp.CSS(`.hits [data-hit-thread=t_seed_c_seed_b]`)))
		until(t, ph, "the chat opens", `(document.querySelector("[data-thread-title]")||{}).textContent === "seeded c_seed_b"`)
		run(t, ph, "rename", click(chromedp.CSS(`.p-manage summary`)), click(chromedp.CSS(`[data-action=rename]`)),
			chromedp.SetValue(chromedp.CSS(`input[aria-label="Thread title"]`), "Kingfisher notes"), click(chromedp.CSS(`form.rename button[type=submit]`)))
		until(t, ph, "the header has the new title", `document.querySelector("[data-thread-title]").textContent === "Kingfisher notes"`)
		run(t, ph, "ask to delete", click(chromedp.CSS(`[data-action=delete]`)))
		until(t, ph, "the confirmation fits and says the session file stays", fmt.Sprintf(`(document.querySelector("[data-confirm-delete]")||{textContent:""}).textContent.includes("left on disk") && %s`, noOverflow))
		shot(t, ph, "phone-thread-delete")
	})
}
