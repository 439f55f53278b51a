package browser

import (
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
