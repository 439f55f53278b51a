//go:build e2e

package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdpnet "github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
)

// js quotes a Go string for a JavaScript expression.
func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// startThread fills the new-thread form and sends the first message.
func startThread(t testing.TB, ctx context.Context, text string) {
	t.Helper()
	run(t, ctx, "open the new-thread form", chromedp.WaitVisible(chromedp.CSS(`form.newthread textarea`)))
	until(t, ctx, "the working directory is filled in", `document.querySelector("form.newthread input[type=text]").value !== ""`)
	run(t, ctx, "write the first message",
		chromedp.SendKeys(chromedp.CSS(`form.newthread textarea`), text),
		click(chromedp.CSS(`form.newthread button[type=submit]`)))
	until(t, ctx, "the chat opens", `location.hash.startsWith("#/c/") && !!document.querySelector("textarea[aria-label=Message]")`)
}

// send types a message into the chat's box and presses Enter.
func send(t testing.TB, ctx context.Context, text string) {
	t.Helper()
	run(t, ctx, "send "+text,
		chromedp.WaitVisible(chromedp.CSS(`textarea[aria-label=Message]`)),
		chromedp.SendKeys(chromedp.CSS(`textarea[aria-label=Message]`), text+"\r"))
}

// receipt is the JS for "the last user message with this text has this receipt".
func receipt(text, state string) string {
	return fmt.Sprintf(`(() => { const m = [...document.querySelectorAll(".msg.user")].filter(e => e.querySelector(".bubble").textContent === %s).pop();
		return !!m && !!m.querySelector('[data-receipt=%s]'); })()`, js(text), js(state))
}

func pageHas(text string) string {
	return fmt.Sprintf(`(document.querySelector(".conv")||{innerText:""}).innerText.includes(%s)`, js(text))
}

// dumpLog logs every thread's event log, for a failure's report.
func dumpLog(t *testing.T, r *rig) {
	var list struct {
		Threads []struct {
			ID string `json:"id"`
		} `json:"threads"`
	}
	r.rest(t, "GET", "/api/threads", nil, &list)
	for _, th := range list.Threads {
		var evs struct {
			Events []json.RawMessage `json:"events"`
		}
		r.rest(t, "GET", "/api/threads/"+th.ID+"/events", nil, &evs)
		for _, e := range evs.Events {
			t.Logf("%s: %s", th.ID, e)
		}
	}
}

func TestDashboard(t *testing.T) {
	r := newRig(t)
	ctx := browser(t, 1280, 860)

	t.Run("1 token login, then no token in the address bar; no cookie is 401", func(t *testing.T) {
		run(t, ctx, "open the login link", chromedp.Navigate(r.LoginURL()), chromedp.WaitVisible(chromedp.CSS(`.side`)))
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

	chatURL := eval[string](t, ctx, `location.href`)
	chatID := strings.TrimPrefix(eval[string](t, ctx, `location.hash`), "#/c/")

	t.Run("1b a page whose cookie is gone goes to the login page", func(t *testing.T) {
		other := browser(t, 1024, 768)
		run(t, other, "log in on the chat", chromedp.Navigate(r.LoginURL()+"#/c/"+chatID), chromedp.WaitVisible(chromedp.CSS(`.side`)))
		until(t, other, "connected", `window.parley.state.conn === "online"`)
		// The socket is closed after the evaluation has answered: the page
		// leaves for the login page at once, and an evaluation still waiting
		// for its answer failed with "target navigated" (once in a full run).
		run(t, other, "lose the cookie and the socket", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, cdpnet.ClearBrowserCookies, cdp.Empty{})
			return err
		}), chromedp.Evaluate[chromedp.Void](`setTimeout(() => window.parley.socket.ws.close(), 0)`))
		until(t, other, "the login page shows", `!!document.querySelector("input[name=token]") && !document.querySelector(".side")`)
	})

	t.Run("2b slash-command completion and the mode switch", func(t *testing.T) {
		box := chromedp.CSS(`textarea[aria-label=Message]`)
		run(t, ctx, "type a slash", chromedp.SendKeys(box, "/"))
		until(t, ctx, "the agent's commands are offered", `document.querySelectorAll(".suggest li").length > 0`)
		first := eval[string](t, ctx, `document.querySelector(".suggest li b").textContent`)
		run(t, ctx, "complete with Tab", chromedp.KeyEvent(kb.Tab))
		until(t, ctx, "the box holds the command", fmt.Sprintf(`document.querySelector("textarea[aria-label=Message]").value === %s`, js(first+" ")))
		run(t, ctx, "clear the box", chromedp.Evaluate[chromedp.Void](`(() => { const el = document.querySelector("textarea[aria-label=Message]"); el.select(); document.execCommand("delete"); })()`))
		until(t, ctx, "the box is empty", `document.querySelector("textarea[aria-label=Message]").value === ""`)

		modes := eval[[]string](t, ctx, `window.parley.state.chat.mode ? window.parley.state.chat.mode.available.map(m => m.id) : []`)
		if len(modes) < 2 || !slices.Contains(modes, "plan") || !slices.Contains(modes, "default") {
			t.Fatalf("got modes %v, want Claude Code's modes with default and plan", modes)
		}
		for _, m := range []string{"plan", "default"} {
			// SetValue fires the select's input and change events, as a person's choice does.
			run(t, ctx, "choose mode "+m, chromedp.SetValue(chromedp.CSS(`.mode select`), m))
			until(t, ctx, "the agent reports mode "+m, fmt.Sprintf(`window.parley.state.chat.mode.current === %s`, js(m)))
		}
	})

	t.Run("3 permission card: click, the tool runs, the follow-up appears; a second tab sees it resolve", func(t *testing.T) {
		t.Cleanup(func() {
			if t.Failed() {
				dumpLog(t, r)
			}
		})
		tab2 := newTab(t, ctx)
		run(t, tab2, "open the chat in a second tab", chromedp.Navigate(chatURL), chromedp.WaitVisible(chromedp.CSS(`textarea[aria-label=Message]`)))
		send(t, ctx, PromptBash)
		open := `!!document.querySelector(".card.perm[data-state=open] button.k-allow_once:not([disabled])")`
		until(t, ctx, "the permission card is open", open)
		until(t, tab2, "the second tab shows the card open", open)
		shot(t, ctx, "desktop-permission")
		run(t, ctx, "allow once", click(chromedp.CSS(`.card.perm[data-state=open] button.k-allow_once`)))
		until(t, ctx, "the follow-up text appears", pageHas(ToolFollowUp))
		until(t, tab2, "the second tab sees the card resolved", `!!document.querySelector(".card.perm[data-state=resolved]") && !document.querySelector(".card.perm button:enabled")`)
		until(t, tab2, "the second tab sees the follow-up", pageHas(ToolFollowUp))
		until(t, ctx, "the tool card is done", `[...document.querySelectorAll(".tool")].some(e => e.querySelector(".tool-status").textContent === "done")`)
		if _, err := os.Stat(filepath.Join(r.work, "made-by-bash")); err != nil {
			t.Errorf("got %v, want the Bash tool to have made the file", err)
		}
	})

	t.Run("3b a card answered elsewhere while this tab was offline is not shown open", func(t *testing.T) {
		tab2 := newTab(t, ctx)
		run(t, tab2, "open the chat in a second tab", chromedp.Navigate(chatURL), chromedp.WaitVisible(chromedp.CSS(`textarea[aria-label=Message]`)))
		until(t, tab2, "the second tab caught up", `window.parley.state.chat.caughtUp`)
		followUps := fmt.Sprintf(`[...document.querySelectorAll(".msg.agent")].filter(e => e.innerText.includes(%s)).length`, js(ToolFollowUp))
		want := fmt.Sprint(eval[int](t, ctx, followUps) + 1)
		send(t, ctx, PromptBash)
		open := `!!document.querySelector(".card.perm[data-state=open] button.k-allow_once:enabled")`
		until(t, ctx, "the card is open", open)
		until(t, tab2, "the second tab shows it open", open)
		// The DevTools protocol cannot block a WebSocket: point this tab's socket at a
		// closed port instead, and drop the live connection.
		offline := func() {
			run(t, ctx, "lose the network", chromedp.Evaluate[chromedp.Void](
				`(() => { const s = window.parley.socket; s.opts.savedURL = s.opts.savedURL || s.opts.url; s.opts.url = () => "ws://127.0.0.1:9/ws/chat"; s.ws && s.ws.close(); })()`))
			until(t, ctx, "the offline banner shows", `!!document.querySelector("[data-banner=offline]")`)
		}
		online := func() {
			run(t, ctx, "the network is back", chromedp.Evaluate[chromedp.Void](
				`(() => { const s = window.parley.socket; s.opts.url = s.opts.savedURL; window.dispatchEvent(new Event("online")); })()`))
			until(t, ctx, "the banner goes", `!document.querySelector("[data-banner]") && window.parley.state.chat.caughtUp`)
		}
		offline()
		online()
		until(t, ctx, "a card still open stays open and clickable after a reconnect", open)
		offline()
		run(t, tab2, "allow in the other tab", click(chromedp.CSS(`.card.perm[data-state=open] button.k-allow_once`)))
		until(t, tab2, "the other tab sees the follow-up", followUps+` === `+want)
		if st := eval[string](t, ctx, `(document.querySelector("[data-banner]")||{dataset:{banner:"none"}}).dataset.banner + " " + [...document.querySelectorAll(".card.perm")].map(e => e.dataset.state).join(",")`); !strings.HasPrefix(st, "offline") || !strings.HasSuffix(st, "open") {
			t.Fatalf("got banner and cards %q while the socket points nowhere, want offline and the card open: the test would prove nothing", st)
		}
		online()
		until(t, ctx, "the card is resolved and the follow-up shown once", `!document.querySelector(".card.perm:not([data-state=resolved])") && !document.querySelector(".card.perm button:enabled") && `+followUps+` === `+want)
	})

	t.Run("3c a file write is shown as a diff after the permission", func(t *testing.T) {
		send(t, ctx, PromptWrite)
		until(t, ctx, "the write asks permission", `!!document.querySelector(".card.perm[data-state=open] button.k-allow_once:enabled")`)
		run(t, ctx, "allow once", click(chromedp.CSS(`.card.perm[data-state=open] button.k-allow_once`)))
		until(t, ctx, "the diff shows the new lines", `[...document.querySelectorAll(".diff .d-add")].map(e => e.textContent).join("|").includes("+ second line")`)
		until(t, ctx, "the follow-up appears", pageHas("Written."))
		shot(t, ctx, "desktop-diff")
		if b, err := os.ReadFile(filepath.Join(r.work, WrittenFile)); err != nil || !strings.Contains(string(b), "second line") {
			t.Errorf("got %q, %v, want the file written", b, err)
		}
	})

	t.Run("3c2 a Write over an existing file shows the diff from its content before it is allowed", func(t *testing.T) {
		send(t, ctx, PromptRewrite)
		card := `.card.perm[data-state=open]`
		until(t, ctx, "the Write card is open", `!!document.querySelector("`+card+` button.k-allow_once:enabled")`)
		lines := func(op string) string {
			return eval[string](t, ctx, `[...document.querySelectorAll("`+card+` .diff .d-`+op+`")].map(e => e.textContent).join("|")`)
		}
		if head := eval[string](t, ctx, `document.querySelector("`+card+` .diff-count").textContent`); head != "+1 −1" {
			t.Errorf("got the card's head %q, want +1 −1 (the file exists: not a new file)", head)
		}
		if del, add := lines("del"), lines("add"); del != "- second line" || add != "+ third line" {
			t.Errorf("got the card's diff -%q +%q, want the current line removed and the new one added", del, add)
		}
		run(t, ctx, "allow once", click(chromedp.CSS(card+` button.k-allow_once`)))
		until(t, ctx, "the card is answered", `!document.querySelector("`+card+`")`)
		testkit.Eventually(t, wait, func() bool {
			b, _ := os.ReadFile(filepath.Join(r.work, WrittenFile))
			return string(b) == "first line\nthird line\n"
		}, "the file was not rewritten")
	})

	t.Run("3d an Edit card shows its diff, highlighted, before it is allowed, on the phone too; Allow always says it switches the mode, and the switch is said", func(t *testing.T) {
		if err := os.WriteFile(filepath.Join(r.work, GreetFile), []byte("package main\n\nfunc greet() string {\n\treturn \"hello\"\n}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		send(t, ctx, PromptEdit)
		card := `.card.perm[data-state=open]`
		until(t, ctx, "the Edit card is open", `!!document.querySelector("`+card+` button.k-allow_once:enabled")`)
		lines := func(c context.Context, op string) string {
			return eval[string](t, c, `[...document.querySelectorAll("`+card+` .diff .d-`+op+`")].map(e => e.textContent).join("|")`)
		}
		if del, add := lines(ctx, "del"), lines(ctx, "add"); del != `- 	return "hello"` || add != `+ 	return "hello, world"` {
			t.Errorf("got the card's diff -%q +%q, want the old line removed and the new one added", del, add)
		}
		if !eval[bool](t, ctx, `!!document.querySelector("`+card+` .diff .d-add .hljs-string")`) {
			t.Error("got the diff's Go unhighlighted, want its string highlighted")
		}
		// "Allow always" is short on its button; what it does is one tap away.
		always := eval[string](t, ctx, `document.querySelector("`+card+` [data-opt-more=allow_always] p").textContent`)
		if !strings.Contains(always, "switch to Accept edits mode for this session") {
			t.Errorf("got Allow always explained as %q, want it to say the mode it sets", always)
		}
		shot(t, ctx, "desktop-edit-card")

		phone := browser(t, 390, 844)
		run(t, phone, "open the chat on a phone", phoneViewport(), chromedp.Navigate(r.LoginURL()+"#/c/"+chatID))
		until(t, phone, "the phone shows the card's diff", `!!document.querySelector("`+card+` .diff .d-add")`)
		if got := lines(phone, "add"); got != `+ 	return "hello, world"` {
			t.Errorf("got the phone's diff +%q", got)
		}
		if w := eval[float64](t, phone, `Math.max(...[...document.querySelectorAll(".card.perm .diff, .card.perm button")].map(e => e.getBoundingClientRect().right))`); w > 390 {
			t.Errorf("the card's diff or buttons reach %v px on a 390 px phone", w)
		}
		shot(t, phone, "phone-edit-card")

		run(t, ctx, "allow always", click(chromedp.CSS(card+` button.k-allow_always`)))
		until(t, ctx, "the edit is made and answered", pageHas("Edited."))
		until(t, ctx, "the mode change is said in the conversation", `[...document.querySelectorAll(".notice")].some(e => e.textContent === "Mode changed to Accept edits.")`)
		if b, _ := os.ReadFile(filepath.Join(r.work, GreetFile)); !strings.Contains(string(b), "hello, world") {
			t.Errorf("got %q, want the file edited", b)
		}
		run(t, ctx, "back to the default mode", chromedp.Evaluate[chromedp.Void](`(() => { const s = document.querySelector(".mode select"); s.value = "default"; s.dispatchEvent(new Event("change", {bubbles: true})); })()`))
		until(t, ctx, "the agent reports mode default", `window.parley.state.chat.mode.current === "default"`)
	})

	t.Run("4 question cards: an option, then free text; reload keeps them answered", func(t *testing.T) {
		send(t, ctx, PromptAsk+" first")
		until(t, ctx, "the question card is open", `!!document.querySelector(".card.question[data-state=open]")`)
		shot(t, ctx, "desktop-question")
		run(t, ctx, "click Blue", click(chromedp.CSS(`.card.question[data-state=open] button.opt[title=cool]`)))
		until(t, ctx, "the thanks appear", fmt.Sprintf(`[...document.querySelectorAll(".msg.agent")].filter(e => e.innerText.includes(%s)).length === 1`, js(QuestionThanks)))
		send(t, ctx, PromptAsk+" second")
		until(t, ctx, "the second card is open", `!!document.querySelector(".card.question[data-state=open]")`)
		run(t, ctx, "answer in own words",
			chromedp.SendKeys(chromedp.CSS(`.card.question[data-state=open] .own input`), "a deep sea green"),
			click(chromedp.CSS(`.card.question[data-state=open] .own button[type=submit]`)))
		until(t, ctx, "the second thanks appear", fmt.Sprintf(`[...document.querySelectorAll(".msg.agent")].filter(e => e.innerText.includes(%s)).length === 2`, js(QuestionThanks)))
		send(t, ctx, PromptAskMany)
		until(t, ctx, "the two-question card is open", `document.querySelectorAll(".card.question[data-state=open] fieldset").length === 2`)
		run(t, ctx, "pick Red, Apple and Plum, then submit",
			click(chromedp.CSS(`.card.question[data-state=open] button.opt[title=warm]`)),
			click(chromedp.CSS(`.card.question[data-state=open] button.opt[title=crisp]`)),
			click(chromedp.CSS(`.card.question[data-state=open] button.opt[title=sweet]`)),
			click(chromedp.CSS(`.card.question[data-state=open] button.primary`)))
		until(t, ctx, "the third thanks appear", fmt.Sprintf(`[...document.querySelectorAll(".msg.agent")].filter(e => e.innerText.includes(%s)).length === 3`, js(QuestionThanks)))
		var results []string
		for _, id := range r.api.ToolUseIDs("AskUserQuestion") {
			if res, ok := r.api.ToolResult(id); ok {
				results = append(results, res.ResultText())
			}
		}
		all := strings.Join(results, "\n")
		for _, want := range []string{`="Blue"`, `="a deep sea green"`, `="Red"`, `="Apple, Plum"`} {
			if !strings.Contains(all, want) {
				t.Errorf("got tool results %q, want %s among them", all, want)
			}
		}
		run(t, ctx, "reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`.card.question`)))
		until(t, ctx, "the cards stay answered", `(() => { const c = [...document.querySelectorAll(".card.question")];
			return c.length === 3 && c.every(e => e.dataset.state === "resolved") && !document.querySelector(".card button:enabled, .card input:enabled"); })()`)
	})

	t.Run("5 stop during a slow answer", func(t *testing.T) {
		send(t, ctx, PromptSlow)
		until(t, ctx, "the stop button shows while the answer streams", `!!document.querySelector("button.stop") && `+pageHas("slowly"))
		run(t, ctx, "click stop", click(chromedp.CSS(`button.stop`)))
		until(t, ctx, "the turn ends and the stop button goes", `!document.querySelector("button.stop") && `+pageHas("Stopped."))
		stopped := `document.querySelectorAll(".notice").length`
		before := eval[int](t, ctx, stopped)
		send(t, ctx, PromptSlow+" again")
		until(t, ctx, "the stop button shows again", `!!document.querySelector("button.stop")`)
		run(t, ctx, "press Esc", chromedp.Focus(chromedp.CSS(`textarea[aria-label=Message]`)), chromedp.KeyEvent(kb.Escape))
		until(t, ctx, "Esc ends the turn", fmt.Sprintf(`!document.querySelector("button.stop") && %s === %d`, stopped, before+1))
	})

	t.Run("6 reload mid-conversation: same history, no duplicates", func(t *testing.T) {
		before := transcript(t, ctx)
		run(t, ctx, "reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`.msg.user`)))
		until(t, ctx, "the page caught up", `window.parley.state.chat.caughtUp`)
		after := transcript(t, ctx)
		if diff := cmpLines(before, after); diff != "" {
			t.Errorf("history changed across a reload:\n%s", diff)
		}
		if dup := eval[int](t, ctx, `(() => { const ids = [...document.querySelectorAll(".msg.user")].map(e => e.dataset.message); return ids.length - new Set(ids).size; })()`); dup != 0 {
			t.Errorf("got %d duplicate messages after reload, want none", dup)
		}
	})

	t.Run("7 server restarted under the page: banner, then catch-up with nothing missing", func(t *testing.T) {
		before := transcript(t, ctx)
		r.stop()
		until(t, ctx, "the offline banner shows", `!!document.querySelector("[data-banner=offline]")`)
		shot(t, ctx, "desktop-offline")
		send(t, ctx, PromptEcho+" while offline")
		until(t, ctx, "the message waits as sending", receipt(PromptEcho+" while offline", "sending"))
		r.start()
		until(t, ctx, "the banner goes", `!document.querySelector("[data-banner]")`)
		until(t, ctx, "the message sent offline is submitted", receipt(PromptEcho+" while offline", "submitted"))
		until(t, ctx, "its answer arrives", pageHas("You said it."))
		after := transcript(t, ctx)
		if len(after) < len(before) || cmpLines(before, after[:len(before)]) != "" {
			t.Errorf("history changed across a restart:\n%s", cmpLines(before, after))
		}
		if dup := eval[int](t, ctx, `(() => { const ids = [...document.querySelectorAll(".msg.user")].map(e => e.dataset.message); return ids.length - new Set(ids).size; })()`); dup != 0 {
			t.Errorf("got %d duplicate messages after the restart, want none", dup)
		}
	})

	t.Run("9 agent output with <script> and <img onerror> is shown as text", func(t *testing.T) {
		send(t, ctx, PromptXSS)
		until(t, ctx, "the answer arrives", pageHas("Raw HTML follows"))
		until(t, ctx, "the tags are text", pageHas("<script>"+XSSMarker+"=1</script>")+` && `+pageHas(`<img src=x onerror="`+XSSMarker+`=2">`))
		if n := eval[int](t, ctx, `document.querySelectorAll(".conv script, .conv img, .conv [onerror]").length`); n != 0 {
			t.Errorf("got %d script/img elements in the conversation, want 0", n)
		}
		if got := eval[string](t, ctx, `typeof `+XSSMarker); got != "undefined" {
			t.Errorf("got %s = %s, want nothing run", XSSMarker, got)
		}
		shot(t, ctx, "desktop-chat")
		run(t, ctx, "dark theme", theme("dark"))
		shot(t, ctx, "desktop-chat-dark")
		run(t, ctx, "light theme", theme("light"))
	})

	t.Run("10 files attached: saved in the thread's directory, named by path, the image shown and sent as one", func(t *testing.T) {
		img := image.NewRGBA(image.Rect(0, 0, 16, 16))
		for i := range img.Pix {
			img.Pix[i] = byte(i)
		}
		var buf bytes.Buffer
		if err := png.Encode(&buf, img); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		pngFile, txtFile := filepath.Join(dir, "dot.png"), filepath.Join(dir, "notes.txt")
		const notes = "remember the milk\n"
		if err := os.WriteFile(pngFile, buf.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(txtFile, []byte(notes), 0o600); err != nil {
			t.Fatal(err)
		}
		run(t, ctx, "attach a text file and an image", chromedp.SetUploadFiles(chromedp.CSS(`.attach input[type=file]`), []string{txtFile, pngFile}),
			chromedp.WaitVisible(chromedp.CSS(`.attached .thumb img`)))
		until(t, ctx, "the text file waits in the composer", `[...document.querySelectorAll(".attached .thumb.file")].some(e => e.textContent.includes("notes.txt"))`)
		send(t, ctx, PromptEcho+" with files")
		last := `[...document.querySelectorAll(".msg.user")].pop()`
		until(t, ctx, "the message names both saved files and is submitted", `(() => { const m = `+last+`;
			return !!m && !!m.querySelector("[data-receipt=submitted]") && m.innerText.includes(".parley-uploads/notes.txt") && m.innerText.includes(".parley-uploads/dot.png"); })()`)
		until(t, ctx, "the image shows as a thumbnail in the transcript", `(() => { const i = `+last+`.querySelector(".files img.upload"); return !!i && i.complete && i.naturalWidth === 16; })()`)

		cwd := eval[string](t, ctx, `window.parley.state.chat.thread.cwd`)
		if got, err := os.ReadFile(filepath.Join(cwd, ".parley-uploads", "notes.txt")); err != nil || string(got) != notes {
			t.Errorf("the thread's directory holds notes.txt = %q (%v), want %q", got, err, notes)
		}
		if got, err := os.ReadFile(filepath.Join(cwd, ".parley-uploads", "dot.png")); err != nil || !bytes.Equal(got, buf.Bytes()) {
			t.Errorf("the thread's directory holds dot.png of %d bytes (%v), want the %d bytes attached", len(got), err, buf.Len())
		}
		// Submitted means Claude Code has the message; its request to the
		// model follows, with the paths in the text and the image as an image.
		gotIt := func() bool {
			for _, req := range r.api.Requests() {
				for _, m := range req.Messages {
					var path, image bool
					for _, c := range m.Content {
						path = path || c.Type == "text" && strings.Contains(c.Text, ".parley-uploads/notes.txt")
						image = image || c.Type == "image"
					}
					if m.Role == "user" && path && image {
						return true
					}
				}
			}
			return false
		}
		testkit.Eventually(t, wait, gotIt, "got no request to the model with the file's path and the image, want both in one user message")

		other := browser(t, 1024, 768)
		hash := eval[string](t, ctx, `location.hash`)
		run(t, other, "open the chat in another tab", chromedp.Navigate(r.LoginURL()+hash), chromedp.WaitVisible(chromedp.CSS(`.side`)))
		until(t, other, "the other tab shows the thumbnail from the server", `[...document.querySelectorAll(".msg.user .files img.upload")].some(i => i.complete && i.naturalWidth === 16)`)

		phone := browser(t, 390, 844)
		run(t, phone, "open the chat on a phone", phoneViewport(), chromedp.Navigate(r.LoginURL()+hash))
		until(t, phone, "the phone shows the thumbnail and the attach button", `[...document.querySelectorAll(".msg.user .files img.upload")].some(i => i.complete && i.naturalWidth === 16) && !!document.querySelector(".p-composer .attach input[type=file]")`)
		if w := eval[float64](t, phone, `Math.max(...[...document.querySelectorAll(".msg.user .files img.upload, .msg.user .bubble, .p-composer .attach")].map(e => e.getBoundingClientRect().right))`); w > 390 {
			t.Errorf("the message's thumbnail, bubble or the attach button reach %v px on a 390 px phone", w)
		}
		shot(t, phone, "phone-attachments")
	})

	t.Run("10b a file refused in the composer says why", func(t *testing.T) {
		dir := t.TempDir()
		var many []string
		for i := range 11 {
			f := filepath.Join(dir, fmt.Sprintf("f%d.txt", i))
			if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			many = append(many, f)
		}
		run(t, ctx, "attach 11 files", chromedp.SetUploadFiles(chromedp.CSS(`.attach input[type=file]`), many))
		until(t, ctx, "the composer says why", `(() => { const a = document.querySelector(".attached [role=alert]"); return !!a && a.textContent.includes("at most 10 files"); })()`)
		big := filepath.Join(dir, "big.log")
		if err := os.WriteFile(big, bytes.Repeat([]byte("x"), 2<<20), 0o600); err != nil {
			t.Fatal(err)
		}
		run(t, ctx, "attach a 2 MB file", chromedp.SetUploadFiles(chromedp.CSS(`.attach input[type=file]`), []string{big}))
		// The limit is the daemon's limits.max_message_bytes (1 MiB by default)
		// less 100 KiB for the text: 924 KB.
		until(t, ctx, "the composer names the file and the limit", `(() => { const a = document.querySelector(".attached [role=alert]"); return !!a && a.textContent.includes("big.log") && a.textContent.includes("924 KB"); })()`)
		if n := eval[int](t, ctx, `document.querySelectorAll(".attached .thumb").length`); n != 0 {
			t.Errorf("got %d files waiting after the refusals, want none", n)
		}
	})

	t.Run("11 resume a native session from the new-thread form", func(t *testing.T) {
		other := browser(t, 1280, 860)
		run(t, other, "log in", chromedp.Navigate(r.LoginURL()), chromedp.WaitVisible(chromedp.CSS(`form.newthread`)))
		until(t, other, "the working directory is filled in", `document.querySelector("form.newthread input[type=text]").value !== ""`)
		run(t, other, "list the sessions", click(chromedp.Search(`//button[contains(., "Resume a session")]`)))
		until(t, other, "the session is listed", `document.querySelectorAll(".sessions button").length >= 1`)
		run(t, other, "resume it", click(chromedp.CSS(`.sessions button`)))
		until(t, other, "the chat shows the thread's history", pageHas(MarkdownHeading))
		want := eval[string](t, ctx, `window.parley.state.chat.thread.id`)
		if got := eval[string](t, other, `window.parley.state.chat.thread.id`); got != want {
			t.Errorf("got thread %s after resuming, want the session's thread %s", got, want)
		}
		third := browser(t, 1024, 768)
		run(t, third, "open the thread's own link", chromedp.Navigate(r.LoginURL()+"#/t/"+want))
		until(t, third, "the link shows the thread on a chat route", `location.hash.startsWith("#/c/") && `+pageHas(MarkdownHeading))
		if got := eval[string](t, third, `window.parley.state.chat.thread.id`); got != want {
			t.Errorf("got thread %s from #/t/%s, want that thread", got, want)
		}
	})

	t.Run("8 phone viewport: list, chat, send", func(t *testing.T) {
		phone := browser(t, 390, 844)
		run(t, phone, "phone login", phoneViewport(), chromedp.Navigate(r.LoginURL()), chromedp.WaitVisible(chromedp.CSS(`.p-thread`)))
		shot(t, phone, "phone-list")
		run(t, phone, "open the thread", click(chromedp.CSS(`.p-thread`)))
		until(t, phone, "the chat view shows the history", `!!document.querySelector(".p-chat") && `+pageHas(ToolFollowUp))
		send(t, phone, PromptEcho+" from the phone")
		until(t, phone, "the phone's message is submitted", receipt(PromptEcho+" from the phone", "submitted"))
		until(t, phone, "the answer arrives", `[...document.querySelectorAll(".msg.agent")].filter(e => e.innerText.includes("You said it.")).length >= 2`)
		shot(t, phone, "phone-chat")
		until(t, ctx, "the desktop tab sees the phone's message", pageHas(PromptEcho+" from the phone"))
		run(t, phone, "back to the list", click(chromedp.CSS(`button.back`)), chromedp.WaitVisible(chromedp.CSS(`.p-thread`)))
	})

	// These run last and start threads of their own: the ones above expect their
	// thread to be the newest.
	t.Run("12 a card open in another thread shows in the list, and a hidden tab is notified once", func(t *testing.T) {
		b := browser(t, 1280, 860)
		run(t, b, "log in", chromedp.Navigate(r.LoginURL()), chromedp.WaitVisible(chromedp.CSS(`.side`)))
		run(t, b, "open the new-thread form", click(chromedp.CSS(`.side button.primary`)))
		startThread(t, b, PromptEcho+" in thread A")
		until(t, b, "A's answer arrives", `!!window.parley.state.chat.thread && `+pageHas("You said it."))
		threadA := eval[string](t, b, `window.parley.state.chat.thread.id`)
		run(t, b, "open the new-thread form", click(chromedp.CSS(`.side button.primary`)))
		startThread(t, b, PromptEcho+" in thread B")
		until(t, b, "B's answer arrives", fmt.Sprintf(`!!window.parley.state.chat.thread && window.parley.state.chat.thread.id !== %s && `, js(threadA))+pageHas("You said it."))
		threadB := eval[string](t, b, `window.parley.state.chat.thread.id`)
		entry := func(id string) string {
			return fmt.Sprintf(`(document.querySelector('.threads button[data-thread=%s]')||{textContent:""}).textContent`, js(id))
		}
		until(t, b, "both threads are listed", entry(threadA)+` !== "" && `+entry(threadB)+` !== ""`)

		// Headless Chromium's tabs are never hidden and show no notifications: the
		// test hides this tab and grants notifications by replacing the two browser
		// APIs the page asks, and records what the page would show.
		run(t, b, "hide the tab, notifications allowed", chromedp.Evaluate[chromedp.Void](`(() => {
			window.__shown = [];
			window.Notification = class { constructor(title, o) { window.__shown.push({ title, body: (o && o.body) || "", tag: (o && o.tag) || "" }); }
				static get permission() { return "granted"; } static requestPermission() { return Promise.resolve("granted"); } };
			Object.defineProperty(document, "visibilityState", { configurable: true, get: () => "hidden" });
		})()`))

		// Another device asks thread A to run a tool: Claude Code asks permission.
		r.rest(t, "POST", "/api/threads/"+threadA+"/messages?wait=0s", map[string]string{"message_id": "m_from_another_device", "text": PromptBash}, nil)
		until(t, b, "A's list entry says it waits for permission while B is on screen",
			entry(threadA)+`.includes("waiting for permission") && window.parley.state.chat.thread.id === `+js(threadB))
		if got := eval[string](t, b, entry(threadB)); strings.Contains(got, "waiting") {
			t.Errorf("got B's entry %q, want it not waiting", got)
		}
		until(t, b, "the agent shows it waits for permission", `document.querySelector('.agents li[data-agent=claude] .hint').textContent === "waiting for permission"`)
		until(t, b, "the hidden tab shows a notification", `window.__shown.some(n => n.title === "parley: Permission needed")`)
		shot(t, b, "desktop-waiting")

		// Allow from another device: the list follows, and the card was announced once.
		var th struct {
			OpenCards []struct {
				RequestID string          `json:"request_id"`
				Request   json.RawMessage `json:"request"`
			} `json:"open_cards"`
		}
		r.rest(t, "GET", "/api/threads/"+threadA, nil, &th)
		if len(th.OpenCards) != 1 {
			t.Fatalf("got %d open cards in thread A, want 1", len(th.OpenCards))
		}
		var req struct {
			Options []struct{ ID, Kind string } `json:"options"`
		}
		json.Unmarshal(th.OpenCards[0].Request, &req)
		allow := ""
		for _, o := range req.Options {
			if o.Kind == "allow_once" {
				allow = o.ID
			}
		}
		if allow == "" {
			t.Fatalf("got options %+v, want an allow_once", req.Options)
		}
		r.rest(t, "POST", "/api/threads/"+threadA+"/cards/"+th.OpenCards[0].RequestID, map[string]string{"option_id": allow}, nil)
		until(t, b, "A's list entry stops waiting", `!`+entry(threadA)+`.includes("waiting")`)
		until(t, b, "the agent stops waiting", `!document.querySelector('.agents li[data-agent=claude] .hint').textContent.includes("waiting")`)
		if n := eval[int](t, b, `window.__shown.length`); n != 1 {
			t.Errorf("got %d notifications (%v), want one for the one card", n, eval[any](t, b, `window.__shown`))
		}
	})

	t.Run("13 a failed first message of a new thread, retried, starts it with the chosen agent and directory", func(t *testing.T) {
		// A daemon with a second agent, so the chosen agent is not the default.
		r2 := newRigAgents(t, nil, "", "helper")
		b := browser(t, 1280, 860)
		run(t, b, "log in", chromedp.Navigate(r2.LoginURL()), chromedp.WaitVisible(chromedp.CSS(`form.newthread textarea`)))
		until(t, b, "the helper agent is offered and the form filled in", `[...document.querySelectorAll("form.newthread select option")].some(o => o.value === "helper") && document.querySelector("form.newthread input[type=text]").value !== ""`)
		// The directory does not exist yet: the first attempt fails, as it would
		// for a person who has not made the folder yet.
		later := filepath.Join(r2.work, "later")
		text := PromptEcho + " retried"
		run(t, b, "choose the helper agent and the new folder, write the first message", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
			const f = document.querySelector("form.newthread");
			const sel = f.querySelector("select"); sel.value = "helper"; sel.dispatchEvent(new Event("change", {bubbles: true}));
			const dir = f.querySelector("input[type=text]"); dir.value = %s; dir.dispatchEvent(new Event("input", {bubbles: true}));
		})()`, js(later))))
		until(t, b, "the form holds the choices", fmt.Sprintf(`document.querySelector("form.newthread select").value === "helper" && document.querySelector("form.newthread input[type=text]").value === %s`, js(later)))
		run(t, b, "start", chromedp.SendKeys(chromedp.CSS(`form.newthread textarea`), text), click(chromedp.CSS(`form.newthread button[type=submit]`)))
		until(t, b, "the first message fails", receipt(text, "failed"))
		if d := eval[string](t, b, `document.querySelector(".msg.user .receipt").textContent`); !strings.Contains(d, "later") {
			t.Errorf("got receipt %q, want the reason naming the folder", d)
		}
		if err := os.MkdirAll(later, 0o755); err != nil {
			t.Fatal(err)
		}
		run(t, b, "retry", click(chromedp.CSS(`.msg.user .receipt button`)))
		until(t, b, "the retried message is submitted", receipt(text, "submitted"))
		until(t, b, "its answer arrives", pageHas("You said it."))
		want, err := filepath.EvalSymlinks(later)
		if err != nil {
			t.Fatal(err)
		}
		if got := eval[[]string](t, b, `[window.parley.state.chat.thread.agent, window.parley.state.chat.thread.cwd]`); !slices.Equal(got, []string{"helper", want}) {
			t.Errorf("got the thread's agent and folder %q, want helper in %s", got, want)
		}
		var list struct {
			Threads []struct{ ID, Agent, Cwd string } `json:"threads"`
		}
		r2.rest(t, "GET", "/api/threads", nil, &list)
		if len(list.Threads) != 1 || list.Threads[0].Agent != "helper" || list.Threads[0].Cwd != want {
			t.Errorf("got threads %+v, want one thread of helper in %s", list.Threads, want)
		}
		if n := eval[int](t, b, fmt.Sprintf(`[...document.querySelectorAll(".msg.user")].filter(e => e.querySelector(".bubble").textContent === %s).length`, js(text))); n != 1 {
			t.Errorf("got the message %d times, want once", n)
		}
	})

	t.Run("15 a thread started elsewhere appears in the list at once, without polling", func(t *testing.T) {
		b := browser(t, 1280, 860)
		run(t, b, "log in", chromedp.Navigate(r.LoginURL()), chromedp.WaitVisible(chromedp.CSS(`.side`)))
		// While the change stream is up the page polls once a minute: an entry
		// seen well within that came from the stream.
		until(t, b, "the change stream is live", `window.parleyFeed.live()`)
		other := chatsock.Dial(t, r.Base, r.Token, client.Options{Chat: "another-device", Since: -1})
		other.WaitFor(0, wait, chatsock.Type(chat.TypeReplayDone), "the other device's socket is ready")
		other.Send(chatsock.Msg("m_elsewhere", PromptEcho+" from another device"))
		i := other.WaitFor(0, wait, chatsock.Delivery("m_elsewhere", chat.DeliveryQueued), "the message is queued")
		thread := other.Get(i).Thread
		untilWithin(t, b, 20*time.Second, "the new thread is listed", fmt.Sprintf(`!!document.querySelector('.threads button[data-thread=%s]')`, js(string(thread))))
		other.WaitFor(i, wait, chatsock.PromptDone("m_elsewhere", chat.StopEndTurn), "the answer on the other device")
	})

	t.Run("14 phone: the chat has the mode and model selects; the list offers notifications", func(t *testing.T) {
		phone := browser(t, 390, 844)
		run(t, phone, "phone login", phoneViewport(), chromedp.Navigate(r.LoginURL()), chromedp.WaitVisible(chromedp.CSS(`.p-bar`)))
		until(t, phone, "the list offers notifications", `!!document.querySelector(".phone button.notify-opt-in")`)
		run(t, phone, "new thread", click(chromedp.CSS(`.p-bar button.primary`)))
		startThread(t, phone, PromptEcho+" on the phone")
		until(t, phone, "the answer arrives", `!!document.querySelector(".p-chat") && `+pageHas("You said it."))
		until(t, phone, "the model select shows the agent's models",
			`(() => { const s = document.querySelector(".p-chat .p-modes label[data-config=model] select"); return !!s && s.options.length >= 2 && s.value !== "" && s.value === window.parley.state.chat.mode.config.find(o => o.id === "model").current; })()`)
		until(t, phone, "the mode select offers plan", `[...document.querySelectorAll(".p-chat .p-modes .mode:not([data-config]) select option")].some(o => o.value === "plan")`)
		shot(t, phone, "phone-chat-modes")
		run(t, phone, "choose mode plan", chromedp.Evaluate[chromedp.Void](`(() => { const s = document.querySelector(".p-chat .p-modes .mode:not([data-config]) select"); s.value = "plan"; s.dispatchEvent(new Event("change", {bubbles: true})); })()`))
		until(t, phone, "the agent reports mode plan", `window.parley.state.chat.mode.current === "plan" && document.querySelector(".p-chat .p-modes .mode:not([data-config]) select").value === "plan"`)
	})

	// Last, on the first thread, with the threads the ones above made in the list.
	t.Run("16 a transcript you can use, drafts per thread, the keyboard, jump to latest, a queued message after the answer", func(t *testing.T) {
		run(t, ctx, "back on the first thread", chromedp.Navigate(chatURL))
		until(t, ctx, "caught up", `window.parley.state.chat.caughtUp && window.parley.state.threads.length >= 3`)
		box := `document.querySelector("textarea[aria-label=Message]")`

		// Timestamps and copy buttons; the Copy of a code block copies its code.
		until(t, ctx, "messages and answers carry their time", `!!document.querySelector(".msg.user .meta time.ts") && !!document.querySelector(".msg.agent .meta time.ts")`)
		run(t, ctx, "copy the Go code block", chromedp.Evaluate[chromedp.Void](`(() => { window.__copied = [];
			Object.defineProperty(navigator, "clipboard", { configurable: true, value: { writeText: (t) => { window.__copied.push(t); return Promise.resolve(); } } });
			document.querySelector(".md pre code.language-go").parentElement.querySelector("button.copy").click(); })()`))
		until(t, ctx, "the code is copied", `window.__copied.length === 1`)
		if got := eval[string](t, ctx, `window.__copied[0]`); got != markdownAnswerGo {
			t.Errorf("copied %q, want the code block's code", got)
		}
		run(t, ctx, "copy the answer", chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll(".msg.agent")].find(e => e.querySelector("h2")).querySelector(".meta button.copy").click()`))
		until(t, ctx, "the answer's Markdown is copied", fmt.Sprintf(`window.__copied.length === 2 && window.__copied[1].startsWith(%s)`, js("## "+MarkdownHeading)))

		// The person's own Markdown is rendered; a long message is folded.
		send(t, ctx, PromptEcho+" with **strong** words")
		until(t, ctx, "the person's Markdown is rendered", `[...document.querySelectorAll(".msg.user .bubble strong")].some(e => e.textContent === "strong")`)
		long := PromptEcho + " a long one\n\n" + strings.Repeat("- a line of a long list\n", 30)
		run(t, ctx, "send a long message", chromedp.SetValue(chromedp.CSS(`textarea[aria-label=Message]`), long), click(chromedp.CSS(`.composer button[type=submit]`)))
		until(t, ctx, "it is folded with Show more", `(() => { const u = [...document.querySelectorAll(".msg.user")].pop(); return !!u.querySelector(".folded") && u.querySelector("button.fold").textContent === "Show more"; })()`)
		run(t, ctx, "unfold it", chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll(".msg.user")].pop().querySelector("button.fold").click()`))
		until(t, ctx, "it is unfolded", `!([...document.querySelectorAll(".msg.user")].pop().querySelector(".folded"))`)
		until(t, ctx, "its answer arrives", `window.parley.state.chat.turnActive === false && [...document.querySelectorAll(".msg.agent")].pop().innerText.includes("You said it.")`)

		// ↑ in the empty box recalls earlier prompts, newest first; ↓ goes back.
		run(t, ctx, "focus the empty box", chromedp.Focus(chromedp.CSS(`textarea[aria-label=Message]`)))
		run(t, ctx, "↑", chromedp.KeyEvent(kb.ArrowUp))
		until(t, ctx, "the last prompt is back", box+`.value === `+js(strings.TrimSpace(long)))
		run(t, ctx, "↑ again", chromedp.KeyEvent(kb.ArrowUp))
		until(t, ctx, "the one before", box+`.value === `+js(PromptEcho+" with **strong** words"))
		run(t, ctx, "↓ twice", chromedp.KeyEvent(kb.ArrowDown), chromedp.KeyEvent(kb.ArrowDown))
		until(t, ctx, "the box is empty again", box+`.value === ""`)

		// A draft belongs to its thread: not in another's box, back with its thread and after a reload.
		run(t, ctx, "type a draft", chromedp.SendKeys(chromedp.CSS(`textarea[aria-label=Message]`), "a draft for this thread"))
		first := eval[string](t, ctx, `window.parley.state.chat.thread.id`)
		run(t, ctx, "Alt+3: another thread", chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`), chromedp.KeyEvent("3", chromedp.KeyModifiers(chromedp.ModifierAlt)))
		until(t, ctx, "another thread shows", `window.parley.state.chat.thread && window.parley.state.chat.thread.id !== `+js(first)+` && window.parley.state.chat.caughtUp`)
		if got := eval[string](t, ctx, box+`.value`); got != "" {
			t.Errorf("got %q in another thread's box, want the draft left in its own", got)
		}
		idx := eval[int](t, ctx, `window.parley.state.threads.findIndex(t => t.id === `+js(first)+`)`)
		run(t, ctx, "Alt+N: the new-thread form", chromedp.KeyEvent("n", chromedp.KeyModifiers(chromedp.ModifierAlt)))
		until(t, ctx, "the new-thread form shows", `!!document.querySelector("form.newthread")`)
		run(t, ctx, "Alt+digit: back to the first thread", chromedp.KeyEvent(fmt.Sprint(idx+1), chromedp.KeyModifiers(chromedp.ModifierAlt)))
		until(t, ctx, "the draft is back with its thread", `window.parley.state.chat.thread && window.parley.state.chat.thread.id === `+js(first)+` && `+box+`.value === "a draft for this thread"`)
		run(t, ctx, "reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`textarea[aria-label=Message]`)))
		until(t, ctx, "the draft survives the reload", box+`.value === "a draft for this thread"`)
		run(t, ctx, "clear the draft", chromedp.Evaluate[chromedp.Void](`(() => { const el = document.querySelector("textarea[aria-label=Message]"); el.focus(); el.select(); document.execCommand("delete"); })()`))
		until(t, ctx, "the box is empty", box+`.value === ""`)

		// The help overlay.
		run(t, ctx, "?", chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`), chromedp.KeyEvent("?"))
		until(t, ctx, "the shortcuts are listed", `!!document.querySelector("[role=dialog] .help") && document.querySelector(".help").innerText.includes("Alt+N")`)
		shot(t, ctx, "desktop-help")
		run(t, ctx, "Esc closes it", chromedp.KeyEvent(kb.Escape))
		until(t, ctx, "the overlay is gone", `!document.querySelector(".help")`)

		// Scrolled up, new output shows "jump to latest" and moves nothing; sending goes to the end.
		until(t, ctx, "caught up", `window.parley.state.chat.caughtUp && !window.parley.state.chat.turnActive`)
		sc := `document.querySelector(".scroll")`
		run(t, ctx, "scroll to the top", chromedp.Evaluate[chromedp.Void](sc+`.scrollTop = 0; `+sc+`.dispatchEvent(new Event("scroll"))`))
		until(t, ctx, "at the top, the log taller than the screen", sc+`.scrollTop === 0 && `+sc+`.scrollHeight > `+sc+`.clientHeight + 200`)
		r.rest(t, "POST", "/api/threads/"+first+"/messages?wait=0s", map[string]string{"message_id": "m_while_reading", "text": PromptEcho + " while you read"}, nil)
		until(t, ctx, "jump to latest counts what came", `(() => { const b = document.querySelector("button.jump"); return !!b && Number(b.dataset.unseen) >= 2; })()`)
		until(t, ctx, "the answer is in", `!window.parley.state.chat.turnActive && `+pageHas(PromptEcho+" while you read"))
		if top := eval[float64](t, ctx, sc+`.scrollTop`); top != 0 {
			t.Errorf("the log moved to %v under the reader, want it still at the top", top)
		}
		run(t, ctx, "jump", click(chromedp.CSS(`button.jump`)))
		atEnd := sc + `.scrollHeight - ` + sc + `.scrollTop - ` + sc + `.clientHeight < 80`
		until(t, ctx, "at the end, the button gone", atEnd+` && !document.querySelector("button.jump")`)
		run(t, ctx, "scroll up again", chromedp.Evaluate[chromedp.Void](sc+`.scrollTop = 0; `+sc+`.dispatchEvent(new Event("scroll"))`))
		send(t, ctx, PromptEcho+" and see it")
		until(t, ctx, "sending scrolled to the message", atEnd+` && `+pageHas(PromptEcho+" and see it"))

		// A message sent during an answer waits after it (queued), with a working time in the conversation.
		send(t, ctx, PromptSlow+" while queueing")
		until(t, ctx, "the answer streams, with the time it has taken", pageHas("slowly")+` && Number((document.querySelector(".conv .working.in-conv")||{dataset:{}}).dataset.elapsed) >= 1`)
		send(t, ctx, PromptEcho+" after the slow one")
		until(t, ctx, "the second message is queued after the answer", `(() => { const q = document.querySelector(".conv .queued .msg.user"); return !!q && q.innerText.includes(`+js(PromptEcho+" after the slow one")+`) && !!q.querySelector("[data-receipt=queued]"); })()`)
		if after := eval[bool](t, ctx, `(() => { const all = [...document.querySelectorAll(".conv .msg")]; const q = all.findIndex(e => e.closest(".queued")); const a = all.findLastIndex(e => e.classList.contains("agent") && e.innerText.includes("slowly")); return q > a; })()`); !after {
			t.Error("the queued message is not after the streaming answer")
		}
		// A queued message can be withdrawn before its turn: it never reaches the agent.
		send(t, ctx, PromptEcho+" to withdraw")
		until(t, ctx, "it waits queued, with Withdraw", `[...document.querySelectorAll(".conv .queued .msg.user")].some(e => e.innerText.includes(`+js(PromptEcho+" to withdraw")+`) && !!e.querySelector("button.withdraw"))`)
		run(t, ctx, "withdraw it", chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll(".conv .queued .msg.user")].find(e => e.innerText.includes(`+js(PromptEcho+" to withdraw")+`)).querySelector("button.withdraw").click()`))
		until(t, ctx, "it says failed, withdrawn", receipt(PromptEcho+" to withdraw", "failed")+` && `+pageHas("withdrawn before its turn"))
		run(t, ctx, "stop the slow answer", click(chromedp.CSS(`button.stop`)))
		until(t, ctx, "the queued message is delivered and answered, in its place", `!document.querySelector(".conv .queued") && `+receipt(PromptEcho+" after the slow one", "submitted")+` && [...document.querySelectorAll(".msg.agent")].pop().innerText.includes("You said it.")`)
		until(t, ctx, "no working indicator once idle", `!window.parley.state.chat.turnActive && !document.querySelector(".conv .working.in-conv")`)
		for _, req := range r.api.Requests() {
			for _, m := range req.Messages {
				for _, c := range m.Content {
					if strings.Contains(c.Text, PromptEcho+" to withdraw") {
						t.Fatalf("the model got the withdrawn message: %q", c.Text)
					}
				}
			}
		}
		if n := eval[int](t, ctx, `[...document.querySelectorAll(".card.question[data-state=resolved] button")].filter(b => !b.disabled).length`); n != 0 {
			t.Errorf("got %d enabled buttons on answered questions, want none", n)
		}

		// The phone shows the new pieces within its width.
		phone := browser(t, 390, 844)
		run(t, phone, "the thread on a phone", phoneViewport(), chromedp.Navigate(r.LoginURL()+"#/c/"+chatID))
		until(t, phone, "the phone shows times and copy buttons", `!!document.querySelector(".msg.agent .meta button.copy") && !!document.querySelector(".msg.user .meta time.ts") && !!document.querySelector(".md pre button.copy")`)
		run(t, phone, "scroll up, ? for help", chromedp.Evaluate[chromedp.Void](`(() => { const s = document.querySelector(".scroll"); s.scrollTop = 0; s.dispatchEvent(new Event("scroll")); })()`), chromedp.KeyEvent("?"))
		until(t, phone, "the help shows", `!!document.querySelector(".help")`)
		if w := eval[float64](t, phone, `Math.max(...[...document.querySelectorAll(".help, .msg .meta, .md pre button.copy")].map(e => e.getBoundingClientRect().right))`); w > 390 {
			t.Errorf("the help, a message's time and copy or a code block's copy reach %v px on a 390 px phone", w)
		}
		shot(t, phone, "phone-help")
	})
}

// transcript is the conversation as lines: each item's kind and text.
func transcript(t testing.TB, ctx context.Context) []string {
	t.Helper()
	return eval[[]string](t, ctx, `[...document.querySelectorAll(".conv > *")].map(e => e.className.split(" ")[0] + ": " + e.innerText.replace(/\s+/g, " ").trim())`)
}

func cmpLines(want, got []string) string {
	var b strings.Builder
	for i := 0; i < len(want) || i < len(got); i++ {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			fmt.Fprintf(&b, "line %d: got %q, want %q\n", i, g, w)
		}
	}
	return b.String()
}

// A plugin that keeps dying is shown as such beside the agents, and /api/plugins
// answers the signed-in page (the cookie), like every API call.
func TestDashboardShowsPlugins(t *testing.T) {
	r := newRigWith(t, nil, `
[[plugin]]
id = "broken"
command = "/bin/false"
allowed_users = ["nobody"]
`)
	ctx := browser(t, 1280, 860)
	run(t, ctx, "log in", chromedp.Navigate(r.LoginURL()), chromedp.WaitVisible(chromedp.CSS(`form.newthread`)))
	until(t, ctx, "the plugin is listed beside the agents", `!!document.querySelector('.plugins [data-plugin="broken"]')`)
	until(t, ctx, "it is shown as not running, with its restarts",
		`(() => { const h = document.querySelector('.plugins [data-plugin="broken"] .hint'); return !!h && !h.textContent.startsWith("running") && /restart/.test(h.textContent); })()`)
}
