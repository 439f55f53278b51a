//go:build e2e

package browser

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/parleyhq/parley/internal/testkit"
)

// TestNoAgentFound: a parley with no agent program on PATH and none in its
// config says so when it starts, and the dashboard's new-thread form (desktop
// and phone) says what to install and how to add an ACP agent, instead of an
// empty list and a Start button disabled with no reason.
func TestNoAgentFound(t *testing.T) {
	testkit.NeedsBrowser(t)
	dir := t.TempDir()
	r := &rig{t: t, dir: dir, addr: "127.0.0.1:0", work: filepath.Join(dir, "work"), env: []string{"PATH=" + filepath.Join(dir, "empty")}}
	for _, d := range []string{r.work, filepath.Join(dir, "empty"), filepath.Join(dir, "home")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte("log_level = \"info\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.start()
	t.Cleanup(r.stop)
	testkit.Eventually(t, wait, func() bool { return strings.Contains(r.output(), "warning: no agent found") },
		"parley serve did not say it found no agent:\n%s", stringer(r.output))
	printed := r.output()
	for _, want := range []string{"npm install -g @anthropic-ai/claude-code", "transport = \"acp\""} {
		if !strings.Contains(printed, want) {
			t.Errorf("parley serve's output lacks %q:\n%s", want, printed)
		}
	}

	check := func(t *testing.T, ctx context.Context) {
		until(t, ctx, "the explanation shows", `!!document.querySelector(".noagents")`)
		text := eval[string](t, ctx, `document.querySelector(".noagents").innerText`)
		for _, want := range []string{"No agent found", "npm install -g @anthropic-ai/claude-code", "npm install -g @google/gemini-cli", "[[agent]]", `transport = "acp"`} {
			if !strings.Contains(text, want) {
				t.Errorf("the explanation lacks %q:\n%s", want, text)
			}
		}
		if why := eval[string](t, ctx, `document.querySelector("form.newthread button[type=submit]").title`); why == "" {
			t.Error("the disabled Start button gives no reason")
		}
		// Nothing of it is cut off or wider than the screen.
		if over := eval[bool](t, ctx, `(() => { const e = document.querySelector(".noagents"); return e.scrollWidth > e.clientWidth + 1 || e.getBoundingClientRect().right > innerWidth + 1; })()`); over {
			t.Error("the explanation is wider than the screen")
		}
	}
	t.Run("desktop", func(t *testing.T) {
		ctx := browser(t, 1440, 900)
		run(t, ctx, "sign in", chromedp.Navigate(r.LoginURL()), chromedp.WaitVisible(chromedp.CSS(`form.newthread`)))
		check(t, ctx)
		shot(t, ctx, "desktop-no-agent")
	})
	t.Run("phone", func(t *testing.T) {
		ctx := browser(t, 390, 844)
		run(t, ctx, "sign in", phoneViewport(), chromedp.Navigate(r.LoginURL()), chromedp.WaitVisible(chromedp.CSS(`.phone`)))
		run(t, ctx, "open the new-thread form", chromedp.Navigate(r.Base+"/#/new"), chromedp.WaitVisible(chromedp.CSS(`form.newthread`)))
		check(t, ctx)
		shot(t, ctx, "phone-no-agent")
	})
}

// stringer prints what f returns when it is printed (a failure's message).
type stringer func() string

func (f stringer) String() string { return f() }
