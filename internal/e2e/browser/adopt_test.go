//go:build e2e

package browser

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
	"github.com/parleyhq/parley/internal/testkit/tmuxterm"
)

// A Claude Code TUI a person started in a tmux pane shows in the Sessions
// view as running there, with Adopt; Adopt makes it a thread that types
// into that very pane: the next message appears in the pane and reaches the
// model with the pane's earlier turn.
func TestSessionsViewAdoptsATmuxPane(t *testing.T) {
	r := newRig(t)
	home, cwd := filepath.Join(r.dir, "home"), filepath.Join(r.work, "proj")
	tm := tmuxterm.Start(t, append(claudeapi.Env(t, r.api, home, r.work), "TERM=xterm-256color"), "env", "-C", cwd, testkit.ClaudeBin(t))
	tm.Within = 60 * time.Second
	tm.WaitScreen("Claude Code's input box", tmuxterm.Has("❯"))
	const first = "a pane session's first prompt"
	tm.TypeLine(first)
	tm.WaitScreen("the answer in the pane", tmuxterm.Has("Noted."))

	ctx := browser(t, 1440, 900)
	run(t, ctx, "sign in", chromedp.Navigate(r.LoginURL()), chromedp.WaitVisible(chromedp.CSS(`.side`)))
	run(t, ctx, "open Sessions", click(chromedp.CSS(`details.sessions summary`)))
	// Claude Code writes its transcript a moment after it draws the answer.
	until(t, ctx, "the pane's session listed running in tmux, with Adopt",
		`(() => { const li = document.querySelector('[data-session][data-running="true"]');
			return !!li && li.textContent.includes("running in tmux") && !!li.querySelector("button.adopt"); })()`)
	id := eval[string](t, ctx, `document.querySelector('[data-session][data-running="true"]').dataset.session`)
	run(t, ctx, "adopt it", click(chromedp.CSS(`[data-session="`+id+`"] button.adopt`)))
	until(t, ctx, "a thread of that session", `(window.parley.state.chat.thread||{}).session_id === `+js(id))
	send(t, ctx, "and now from parley")
	tm.WaitScreen("the message typed into the person's pane", tmuxterm.Has("and now from parley"))
	var got []string
	n := 0
	testkit.Eventually(t, 60*time.Second, func() bool {
		got, n = nil, 0
		for _, req := range r.api.ScenarioRequests() {
			if req.LastUserText() == "and now from parley" {
				got, n = req.UserTexts(), n+1
			}
		}
		return got != nil
	}, "the model asked for the message sent from the dashboard")
	if n != 1 || !slices.Equal(got, []string{first, "and now from parley"}) {
		t.Errorf("the model was asked %d times, last with %q; want once, after the pane's turn", n, got)
	}
}
