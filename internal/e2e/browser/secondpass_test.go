//go:build e2e

package browser

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/sqlite"
)

// seedUsage writes a thread whose two turns reported usage, the second one
// stopped by the person: $0.50 and $0.25.
func seedUsage(t testing.TB, dataDir, cwd string) {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(dataDir, "parley.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now().Add(-time.Minute)
	th := chat.Thread{ID: "t_usage", Agent: "claude", Cwd: cwd, Title: "Usage probe", State: chat.ThreadUnloaded, CreatedAt: now, UpdatedAt: now, LastSeq: 4}
	var evs []chat.Event
	for i, p := range []chat.Payload{
		chat.Usage{InputTokens: 1200, OutputTokens: 80, CostUSD: 0.5},
		chat.PromptDone{StopReason: chat.StopEndTurn},
		chat.Usage{InputTokens: 300, OutputTokens: 20, CostUSD: 0.25},
		chat.PromptDone{StopReason: chat.StopCancelled},
	} {
		ev, err := chat.NewEvent(th.ID, p, now.Add(time.Duration(i)*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		ev.Seq = int64(i + 1)
		evs = append(evs, ev)
	}
	if err := st.Commit(t.Context(), store.Batch{Thread: &th, Events: evs}); err != nil {
		t.Fatal(err)
	}
}

// unnamedControls lists the page's controls that Chromium's accessibility
// tree gives no name: a screen reader would say only "button".
func unnamedInAXTree(t testing.TB, ctx context.Context) []string {
	t.Helper()
	if _, err := chromedp.Call(ctx, accessibility.Enable, cdp.Empty{}); err != nil {
		t.Fatalf("Accessibility.enable: %v", err)
	}
	tree, err := chromedp.Call(ctx, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	if err != nil {
		t.Fatalf("Accessibility.getFullAXTree: %v", err)
	}
	controls := map[string]bool{"button": true, "textbox": true, "searchbox": true, "combobox": true, "checkbox": true, "link": true, "radio": true, "switch": true, "spinbutton": true}
	var out []string
	for _, n := range tree.Nodes {
		if n.Ignored || n.Role == nil {
			continue
		}
		role := strings.Trim(string(n.Role.Value), `"`)
		if !controls[role] {
			continue
		}
		if n.Name == nil || strings.Trim(string(n.Name.Value), `" `) == "" {
			out = append(out, role)
		}
	}
	return out
}

// fakeSpeech stands in for the browser's speech recognition (headless
// Chromium has no microphone): started, it hears the words, then ends.
const fakeSpeech = `window.SpeechRecognition = class { start() { setTimeout(() => {
	const r = [{ transcript: " please check the tests " }]; r.isFinal = true;
	this.onresult && this.onresult({ resultIndex: 0, results: [r] }); this.onend && this.onend(); }, 20); }
	stop() { this.onend && this.onend(); } abort() {} }`

const noSpeech = `(() => { for (const k of ["SpeechRecognition", "webkitSpeechRecognition"]) { try { delete window[k]; } catch {} window[k] = undefined; } })()`

// TestDashboardSecondPass: search shows one row per thread with its hits
// under it, the words marked; voice input writes into the box and never
// sends (and says so where the browser has none); the Usage view sums what
// the agents reported, stopped turns included; the new-thread form offers
// the folder last used with an agent; Rename puts the cursor in the title; a
// permission card says its command once, "Allow always" short with its rule
// on demand, thumb-sized buttons of one height on a phone; Live agents names
// threads in full lines; "Add a device" shows its QR code in view and warns
// of plain HTTP. Desktop and a 390×844 phone, every control named.
func TestDashboardSecondPass(t *testing.T) {
	r := newRigWith(t, func(dataDir, cwd string) {
		seedThread(t, dataDir, cwd, "c_seed_a", 60)
		seedThread(t, dataDir, cwd, "c_seed_b", 12)
		seedUsage(t, dataDir, cwd)
	}, "")
	if err := os.MkdirAll(filepath.Join(r.work, "proj", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := browser(t, 1280, 860)
	run(t, ctx, "sign in", chromedp.Navigate(r.LoginURL()), chromedp.WaitVisible(chromedp.CSS(`.side`)))
	box := chromedp.CSS(`input[aria-label="Search threads"]`)
	noOverflow := `document.documentElement.scrollWidth <= window.innerWidth`

	grouped := `(() => {
		const groups = [...document.querySelectorAll(".hits [data-hit-group]")].map(g => g.dataset.hitGroup);
		const a = document.querySelector('.hits [data-hit-group=t_seed_c_seed_a]');
		return groups.length === new Set(groups).size && groups.includes("t_seed_c_seed_b") && !!a &&
			a.querySelectorAll(".hit[data-hit-seq]").length > 1 &&
			[...a.querySelectorAll(".hit[data-hit-seq]")].every(h => [...h.querySelectorAll("mark")].some(m => m.textContent.toLowerCase() === "question")); })()`
	t.Run("search: one row per thread, hits under it, marked", func(t *testing.T) {
		run(t, ctx, "search", chromedp.SetValue(box, "question"))
		until(t, ctx, "each thread once, its hits under it with the word marked", grouped)
		run(t, ctx, "open a hit", click(chromedp.CSS(`.hits [data-hit-group=t_seed_c_seed_a] .hit[data-hit-seq='7']`)))
		until(t, ctx, "the thread opens at the message", `!!document.querySelector(".msg.user.found[data-message=m_seed_1]")`)
		if un := unnamedInAXTree(t, ctx); len(un) > 0 {
			t.Errorf("controls without a name: %v", un)
		}
		run(t, ctx, "clear the search", chromedp.Evaluate[chromedp.Void](`(() => { const el = document.querySelector('input[aria-label="Search threads"]'); el.value = ""; el.dispatchEvent(new Event("input", { bubbles: true })); })()`))
	})

	t.Run("rename puts the cursor in the title", func(t *testing.T) {
		run(t, ctx, "open a thread", chromedp.Navigate(r.Base+"/#/c/c_seed_b"), chromedp.WaitVisible(chromedp.CSS(`[data-action=rename]`)))
		run(t, ctx, "rename", click(chromedp.CSS(`[data-action=rename]`)))
		until(t, ctx, "the title field has the focus", `document.activeElement === document.querySelector('input[aria-label="Thread title"]')`)
	})

	voice := func(t *testing.T, ctx context.Context) {
		users := `document.querySelectorAll(".msg.user").length`
		until(t, ctx, "the conversation is shown", `!!document.querySelector("[data-message=m_seed_1]")`)
		before := eval[int](t, ctx, users)
		run(t, ctx, "a browser with speech recognition", chromedp.Evaluate[chromedp.Void](fakeSpeech))
		run(t, ctx, "speak", click(chromedp.CSS(`button[aria-label="Voice input"]`)))
		until(t, ctx, "the words are in the box, to send or not", `document.querySelector("textarea[aria-label=Message]").value === "please check the tests"`)
		if after := eval[int](t, ctx, users); after != before {
			t.Errorf("voice input sent a message: %d messages, were %d", after, before)
		}
		run(t, ctx, "a browser without it", chromedp.Evaluate[chromedp.Void](noSpeech), click(chromedp.CSS(`button[aria-label="Voice input"]`)))
		until(t, ctx, "it says so", `(document.querySelector("[data-voice-note]")||{textContent:""}).textContent.includes("not supported in this browser")`)
		if over := eval[bool](t, ctx, `(() => { const b = document.querySelector("[data-voice-note]").getBoundingClientRect(); return b.left < 0 || b.right > innerWidth; })()`); over {
			t.Error("the voice note is wider than the screen")
		}
		if un := unnamedInAXTree(t, ctx); len(un) > 0 {
			t.Errorf("controls without a name: %v", un)
		}
	}
	t.Run("voice input, desktop", func(t *testing.T) { voice(t, ctx) })

	usage := func(t *testing.T, ctx context.Context, total bool) {
		run(t, ctx, "open Usage", click(chromedp.CSS(`details.usage-view summary`)))
		if total { // before any real turn adds its own
			until(t, ctx, "the total, the stopped turn included", `(document.querySelector("[data-usage-total]")||{textContent:""}).textContent.includes("$0.75") && document.querySelector("[data-usage-total]").textContent.includes("2 turns")`)
		}
		run(t, ctx, "per thread", chromedp.SetValue(chromedp.CSS(`select[aria-label="Group usage by"]`), "by_thread"),
			chromedp.Evaluate[chromedp.Void](`document.querySelector('select[aria-label="Group usage by"]').dispatchEvent(new Event("change", { bubbles: true }))`))
		until(t, ctx, "the thread by its title, with its cost", `(() => { const e = document.querySelector(".usage-list [data-usage-key=t_usage]"); return !!e && e.textContent.includes("Usage probe") && e.textContent.includes("$0.75"); })()`)
		until(t, ctx, "nothing wider than the screen", noOverflow+` && document.querySelector(".usage-list").getBoundingClientRect().right <= innerWidth`)
		run(t, ctx, "close Usage", click(chromedp.CSS(`details.usage-view summary`)))
	}
	t.Run("usage, desktop", func(t *testing.T) { usage(t, ctx, true) })

	t.Run("new-thread form remembers the folder; a permission card", func(t *testing.T) {
		folder := filepath.Join(r.work, "proj", "deep")
		run(t, ctx, "new thread", chromedp.Navigate(r.Base+"/#/new"), chromedp.WaitVisible(chromedp.CSS(`form.newthread textarea`)))
		until(t, ctx, "the root is offered first", `document.querySelector("form.newthread input[type=text]").value === `+js(r.work))
		run(t, ctx, "start in a folder of its own", chromedp.SetValue(chromedp.CSS(`form.newthread input[type=text]`), folder),
			chromedp.Evaluate[chromedp.Void](`document.querySelector("form.newthread input[type=text]").dispatchEvent(new Event("input", { bubbles: true }))`))
		startThread(t, ctx, PromptBash)
		card := `.card.perm[data-state=open]`
		until(t, ctx, "the card is open", `!!document.querySelector("`+card+` button.k-allow_once:enabled")`)
		if n := eval[int](t, ctx, `(document.querySelector("`+card+`").innerText.match(/touch made-by-bash/g)||[]).length`); n != 1 {
			t.Errorf("the command shows %d times on the card, want once:\n%s", n, eval[string](t, ctx, `document.querySelector("`+card+`").innerText`))
		}
		if got := eval[string](t, ctx, `document.querySelector("`+card+` button.k-allow_always").textContent`); got != "Allow always" {
			t.Errorf("Allow always reads %q, want short", got)
		}
		run(t, ctx, "what it does", click(chromedp.CSS(card+` [data-opt-more=allow_always] summary`)))
		until(t, ctx, "its rule, on demand", `document.querySelector("`+card+` [data-opt-more=allow_always] p").textContent.includes("touch")`)
		if un := unnamedInAXTree(t, ctx); len(un) > 0 {
			t.Errorf("controls without a name: %v", un)
		}

		phone := browser(t, 390, 844)
		run(t, phone, "the card on a phone", phoneViewport(), chromedp.Navigate(r.LoginURL()), chromedp.WaitVisible(chromedp.CSS(`.phone`)))
		run(t, phone, "open the thread", chromedp.Navigate(r.Base+"/#/c/"+strings.TrimPrefix(eval[string](t, ctx, `location.hash`), "#/c/")))
		until(t, phone, "the card's buttons: thumb-sized, one height, within the screen", `(() => {
			const bs = [...document.querySelectorAll("`+card+` .options button")]; if (bs.length < 3) return false;
			const h = bs.map(b => b.getBoundingClientRect().height);
			return h.every(x => x >= 44 && Math.abs(x - h[0]) < 1) && bs.every(b => b.getBoundingClientRect().right <= innerWidth); })()`)
		until(t, phone, "nothing wider than the screen", noOverflow)
		run(t, ctx, "allow once", click(chromedp.CSS(card+` button.k-allow_once`)))
		until(t, ctx, "answered", pageHas(ToolFollowUp))

		t.Run("live agents: full lines, no raw ids", func(t *testing.T) {
			for _, c := range []context.Context{ctx, phone} {
				run(t, c, "home", chromedp.Navigate(r.Base+"/#/"))
				until(t, c, "the live agent named by its thread, on lines of its own", `(() => { const n = document.querySelector(".live [data-live] .name");
					if (!n || /t_[0-9a-z]{6,}/i.test(n.textContent) || !n.textContent.includes("run the tool")) return false;
					const l = document.querySelector(".live").getBoundingClientRect(), b = n.getBoundingClientRect();
					return b.width >= l.width / 2 && b.right <= innerWidth; })()`)
			}
		})

		run(t, ctx, "new thread again", chromedp.Navigate(r.Base+"/#/"), chromedp.Navigate(r.Base+"/#/new"), chromedp.WaitVisible(chromedp.CSS(`form.newthread textarea`)))
		until(t, ctx, "the folder last used with this agent is offered", `document.querySelector("form.newthread input[type=text]").value === `+js(folder))
	})

	t.Run("add a device: the QR code in view, plain HTTP said", func(t *testing.T) {
		for _, c := range []context.Context{ctx, browser(t, 390, 844)} {
			if c != ctx {
				run(t, c, "sign in on a phone", phoneViewport(), chromedp.Navigate(r.LoginURL()), chromedp.WaitVisible(chromedp.CSS(`.phone`)))
			} else {
				run(t, c, "home", chromedp.Navigate(r.Base+"/#/"), chromedp.WaitVisible(chromedp.CSS(`.side`)))
			}
			run(t, c, "Devices", click(chromedp.CSS(`details.devices summary`)), click(chromedp.CSS(`button.add-device`)))
			until(t, c, "the QR code is in view", `(() => { const i = document.querySelector("figure.pair img"); if (!i || !i.complete) return false;
				const b = i.getBoundingClientRect(); return b.top >= 0 && b.bottom <= innerHeight && b.right <= innerWidth; })()`)
			until(t, c, "plain HTTP is warned of", `(document.querySelector("[data-plain-http]")||{textContent:""}).textContent.includes("plain HTTP")`)
		}
	})

	t.Run("phone 390x844: search, voice, usage", func(t *testing.T) {
		ph := browser(t, 390, 844)
		run(t, ph, "sign in on a phone", phoneViewport(), chromedp.Navigate(r.LoginURL()), chromedp.WaitVisible(chromedp.CSS(`.phone`)))
		run(t, ph, "search", chromedp.SetValue(box, "question"))
		until(t, ph, "each thread once, hits under it, within the screen", grouped+` && `+noOverflow)
		if un := unnamedInAXTree(t, ph); len(un) > 0 {
			t.Errorf("controls without a name: %v", un)
		}
		run(t, ph, "clear the search", chromedp.Evaluate[chromedp.Void](`(() => { const el = document.querySelector('input[aria-label="Search threads"]'); el.value = ""; el.dispatchEvent(new Event("input", { bubbles: true })); })()`))
		usage(t, ph, false)
		run(t, ph, "a thread", chromedp.Navigate(r.Base+"/#/c/c_seed_b"), chromedp.WaitVisible(chromedp.CSS(`button[aria-label="Voice input"]`)))
		if h := eval[float64](t, ph, `document.querySelector('button[aria-label="Voice input"]').getBoundingClientRect().height`); h < 44 {
			t.Errorf("the microphone button is %v px high on a phone, want a thumb's 44", h)
		}
		voice(t, ph)
	})
}
