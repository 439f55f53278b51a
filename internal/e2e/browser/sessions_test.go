//go:build e2e

package browser

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

// A session a person made with `claude -p` in a terminal shows in the
// dashboard's Sessions view with its first prompt, on the desktop and the
// phone; Continue makes it a thread of that session (the socket's
// resume_session), and the next message reaches the model with the earlier
// turn; the session then belongs to a thread and leaves the view.
func TestSessionsViewContinuesATerminalSession(t *testing.T) {
	r := newRig(t)
	home, cwd := filepath.Join(r.dir, "home"), filepath.Join(r.work, "proj")
	const first = "a terminal session's first prompt"
	cmd := exec.Command(testkit.ClaudeBin(t), "-p", first)
	cmd.Dir = cwd
	cmd.Env = append(os.Environ(), claudeapi.Env(t, r.api, home, r.work)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("claude -p: %v\n%s", err, out)
	}
	listed := `(() => { const li = [...document.querySelectorAll("[data-session]")].find(e => e.textContent.includes(` + js(first) + `));
		return !!li && li.textContent.includes("proj") && li.textContent.includes("1 turn") && li.dataset.running === "false"; })()`

	phone := browser(t, 390, 844)
	run(t, phone, "sign in on the phone", phoneViewport(), chromedp.Navigate(r.LoginURL()))
	run(t, phone, "open Sessions", click(chromedp.CSS(`details.sessions summary`)))
	until(t, phone, "the terminal session listed on the phone", listed)

	ctx := browser(t, 1440, 900)
	run(t, ctx, "sign in", chromedp.Navigate(r.LoginURL()), chromedp.WaitVisible(chromedp.CSS(`.side`)))
	run(t, ctx, "open Sessions", click(chromedp.CSS(`details.sessions summary`)))
	until(t, ctx, "the terminal session listed", listed)
	id := eval[string](t, ctx, `[...document.querySelectorAll("[data-session]")].find(e => e.textContent.includes(`+js(first)+`)).dataset.session`)
	run(t, ctx, "continue it", click(chromedp.CSS(`[data-session="`+id+`"] button.continue`)))
	until(t, ctx, "a thread of that session", `(window.parley.state.chat.thread||{}).session_id === `+js(id))
	send(t, ctx, "and now from parley")
	// The thread already shows the terminal's answer (imported): wait for
	// the model to be asked, not for an answer on the page.
	var got []string
	testkit.Eventually(t, 60*time.Second, func() bool {
		for _, req := range r.api.ScenarioRequests() {
			if slices.Contains(req.UserTexts(), "and now from parley") {
				got = req.UserTexts()
			}
		}
		return got != nil
	}, "the model was not asked for the message sent from parley")
	if !slices.Contains(got, first) {
		t.Errorf("the model's request after Continue: %q, want the terminal's turn in it", got)
	}
	run(t, ctx, "open Sessions again", chromedp.Navigate(r.Base+"/"), chromedp.WaitVisible(chromedp.CSS(`.side`)), click(chromedp.CSS(`details.sessions summary`)))
	until(t, ctx, "the session left the view", `(document.querySelector("details.sessions[open]")||{textContent:""}).textContent.includes("No agent sessions") && !document.querySelector('[data-session="`+id+`"]')`)
}
