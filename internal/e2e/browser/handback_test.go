//go:build e2e

package browser

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

// A terminal session continued in parley goes back to a terminal from the
// thread's actions: "Continue in a terminal" ends parley's Claude Code and the
// conversation shows the exact command that resumes the session there.
func TestContinueInATerminalShowsTheCommand(t *testing.T) {
	r := newRig(t)
	home, cwd := filepath.Join(r.dir, "home"), filepath.Join(r.work, "proj")
	const first = "a session to hand back"
	cmd := exec.Command(testkit.ClaudeBin(t), "-p", first)
	cmd.Dir = cwd
	cmd.Env = append(os.Environ(), claudeapi.Env(t, r.api, home, r.work)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("claude -p: %v\n%s", err, out)
	}

	ctx := browser(t, 1440, 900)
	run(t, ctx, "sign in", chromedp.Navigate(r.LoginURL()), chromedp.WaitVisible(chromedp.CSS(`.side`)))
	run(t, ctx, "open Sessions", click(chromedp.CSS(`details.sessions summary`)))
	until(t, ctx, "the terminal session listed", `[...document.querySelectorAll("[data-session]")].some(e => e.textContent.includes(`+js(first)+`))`)
	id := eval[string](t, ctx, `[...document.querySelectorAll("[data-session]")].find(e => e.textContent.includes(`+js(first)+`)).dataset.session`)
	run(t, ctx, "continue it here", click(chromedp.CSS(`[data-session="`+id+`"] button.continue`)))
	until(t, ctx, "a thread of that session", `(window.parley.state.chat.thread||{}).session_id === `+js(id))

	run(t, ctx, "continue in a terminal", click(chromedp.CSS(`[data-action="hand-back"]`)))
	until(t, ctx, "the command shown", `!!document.querySelector("[data-handback-command]")`)
	got := eval[string](t, ctx, `document.querySelector("[data-handback-command]").textContent`)
	want := driver.ShellLine("cd", cwd) + " && "
	if !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "claude --resume "+id) {
		t.Errorf("command shown: %q, want %q… claude --resume %s", got, want, id)
	}
	until(t, ctx, "the thread says handed back, its action done", `(window.parley.state.chat.thread||{}).state === "handed_back" && document.querySelector('[data-action="hand-back"]').disabled`)
}
