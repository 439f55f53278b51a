package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// js quotes a Go string for a JavaScript expression.
func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// startThread fills the new-thread form and sends the first message.
func startThread(t *testing.T, ctx context.Context, text string) {
	t.Helper()
	run(t, ctx, "open the new-thread form", chromedp.WaitVisible(`form.newthread textarea`, chromedp.ByQuery))
	until(t, ctx, "the working directory is filled in", `document.querySelector("form.newthread input[type=text]").value !== ""`)
	run(t, ctx, "write the first message",
		chromedp.SendKeys(`form.newthread textarea`, text, chromedp.ByQuery),
		chromedp.Click(`form.newthread button[type=submit]`, chromedp.ByQuery))
	until(t, ctx, "the chat opens", `location.hash.startsWith("#/c/") && !!document.querySelector("textarea[aria-label=Message]")`)
}

// send types a message into the chat's box and presses Enter.
func send(t *testing.T, ctx context.Context, text string) {
	t.Helper()
	run(t, ctx, "send "+text,
		chromedp.WaitVisible(`textarea[aria-label=Message]`, chromedp.ByQuery),
		chromedp.SendKeys(`textarea[aria-label=Message]`, text+"\r", chromedp.ByQuery))
}

// receipt is the JS for "the last user message with this text has this receipt".
func receipt(text, state string) string {
	return fmt.Sprintf(`(() => { const m = [...document.querySelectorAll(".msg.user")].filter(e => e.querySelector(".bubble").textContent === %s).pop();
		return !!m && !!m.querySelector('[data-receipt=%s]'); })()`, js(text), js(state))
}

func pageHas(text string) string {
	return fmt.Sprintf(`(document.querySelector(".conv")||{innerText:""}).innerText.includes(%s)`, js(text))
}

func TestDashboard(t *testing.T) {
	r := newRig(t)
	ctx := browser(t, 1280, 860)

	t.Run("1 token login, then no token in the address bar; no cookie is 401", func(t *testing.T) {
		run(t, ctx, "open the login link", chromedp.Navigate(r.LoginURL()), chromedp.WaitVisible(`.side`, chromedp.ByQuery))
		loc := eval[string](t, ctx, `location.href`)
		if strings.Contains(loc, "token") || strings.Contains(loc, r.Token) {
			t.Errorf("got address %q, want the token gone", loc)
		}
		for _, path := range []string{"/api/threads", "/api/agents", "/ws/chat"} {
			if resp := get(t, r.Base+path, nil); resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("GET %s without the cookie: got %d, want 401", path, resp.StatusCode)
			}
		}
		if resp := get(t, r.Base+"/", nil); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET / without the cookie: got %d, want 401 (the login page)", resp.StatusCode)
		}
		shot(t, ctx, "desktop-new-thread")
	})

	t.Run("2 send, receipt submitted, Markdown with highlighted code", func(t *testing.T) {
		startThread(t, ctx, PromptMarkdown)
		until(t, ctx, "the receipt reaches submitted", receipt(PromptMarkdown, "submitted"))
		until(t, ctx, "the heading is rendered", fmt.Sprintf(`[...document.querySelectorAll(".md h2")].some(h => h.textContent === %s)`, js(MarkdownHeading)))
		until(t, ctx, "the Go code is highlighted", `!!document.querySelector(".md pre code.language-go .hljs-keyword")`)
		if got := eval[string](t, ctx, `document.querySelector(".md strong").textContent`); got != "bold" {
			t.Errorf("got strong %q, want bold", got)
		}
		until(t, ctx, "the thought is collapsed", `!!document.querySelector("details.thought:not([open])")`)
	})
}

