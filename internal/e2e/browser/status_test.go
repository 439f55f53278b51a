//go:build e2e

package browser

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/sqlite"
)

// seedBare writes one thread with no events into the data folder's store.
func seedBare(t testing.TB, dataDir string, th chat.Thread) {
	t.Helper()
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), filepath.Join(dataDir, "parley.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Commit(context.Background(), store.Batch{Thread: &th}); err != nil {
		t.Fatal(err)
	}
}

// TestStatusTellsTheTruth: the header shows a new thread's title as soon as it
// has one (not the directory's name until a reload); an agent whose one old
// thread crashed is still "ready"; a thread whose agent is no longer configured
// says so, not "crashed"; Stop shows "Stopping…" until the turn ends;
// while offline the lists say their states are old. Desktop and phone.
func TestStatusTellsTheTruth(t *testing.T) {
	old := time.Now().Add(-48 * time.Hour)
	r := newRigWith(t, func(dataDir, cwd string) {
		seedBare(t, dataDir, chat.Thread{ID: "t_old_crash", Agent: "claude", Cwd: cwd, Title: "an old crash", State: chat.ThreadCrashed, CreatedAt: old, UpdatedAt: old})
		seedBare(t, dataDir, chat.Thread{ID: "t_gone", Agent: "gone", Cwd: cwd, Title: "agent gone", State: chat.ThreadUnloaded, CreatedAt: old, UpdatedAt: old})
		seedBare(t, dataDir, chat.Thread{ID: "t_gone2", Agent: "gone", Cwd: cwd, Title: "agent gone too", State: chat.ThreadUnloaded, CreatedAt: old, UpdatedAt: old})
	}, "")
	ctx := browser(t, 1440, 900)
	run(t, ctx, "sign in", chromedp.Navigate(r.LoginURL()), chromedp.WaitVisible(chromedp.CSS(`.side`)))
	until(t, ctx, "the agent is ready though its old thread crashed",
		`(document.querySelector('[data-agent=claude] .hint')||{}).textContent === "ready"`)

	t.Run("the title in the header", func(t *testing.T) {
		startThread(t, ctx, PromptEcho+" a title for the header")
		until(t, ctx, "the header shows the thread's title", `document.querySelector("[data-thread-title]").textContent === `+js(PromptEcho+" a title for the header"))
	})
	t.Run("usage per turn and per thread", func(t *testing.T) {
		// Claude Code's result carries the turn's tokens, cost and the model's
		// context window: a line under the turn, the thread's totals in the header.
		until(t, ctx, "the turn's usage line", `[...document.querySelectorAll(".notice.n-usage")].some(e => /\d+ in · \d+ out · \$0\.\d{4} · context \d+% \(\d+ of 1\.0M\)|\d+ in · \d+ out · \$0\.\d{4} · context \d+% \(\d+ of 1000k\)/.test(e.textContent))`)
		until(t, ctx, "the thread's totals", `/^1 turn · \d+ tokens · \$0\.\d{4} · context/.test((document.querySelector("[data-usage]")||{}).textContent||"")`)
	})
	t.Run("a refused file says why", func(t *testing.T) {
		// Any file is attached now (saved in the thread's folder), but not past
		// the message's limit: a file too large is not attached, and the
		// composer names it and says why, instead of dropping it silently.
		run(t, ctx, "drop a file too large", chromedp.Evaluate[chromedp.Void](`(() => {
			const dt = new DataTransfer(); dt.items.add(new File([new Uint8Array(2 * 1024 * 1024)], "notes.txt", { type: "text/plain" }));
			document.querySelector("form.composer").dispatchEvent(new DragEvent("drop", { dataTransfer: dt, bubbles: true, cancelable: true }));
		})()`))
		until(t, ctx, "the refusal names the file and why", `(() => { const e = document.querySelector(".attached [role=alert]");
			return !!e && e.textContent.includes("notes.txt") && e.textContent.includes("at most"); })()`)
		if eval[bool](t, ctx, `!!document.querySelector(".attached .thumb")`) {
			t.Error("the refused file is attached all the same")
		}
	})
	t.Run("stopping", func(t *testing.T) {
		send(t, ctx, PromptSlow)
		until(t, ctx, "the slow answer streams", pageHas("slowly slowly"))
		// Clicking Stop marks the chat stopping at once, in the same task: the
		// button says so until the turn's end comes back.
		if !eval[bool](t, ctx, `(() => { document.querySelector("button.stop").click(); return window.parley.state.chat.stopping === true; })()`) {
			t.Fatal("Stop did not mark the chat as stopping")
		}
		until(t, ctx, "Stopped. and no stopping left", pageHas("Stopped.")+` && !window.parley.state.chat.stopping && !document.querySelector("button.stop")`)
	})
	t.Run("a thread whose agent is gone", func(t *testing.T) {
		run(t, ctx, "open it", click(chromedp.CSS(`[data-thread=t_gone]`)))
		until(t, ctx, "it is shown", `document.querySelector("[data-thread-title]").textContent === "agent gone"`)
		send(t, ctx, "hello")
		until(t, ctx, "the list says the agent is not configured",
			`(document.querySelector("[data-thread=t_gone]")||{innerText:""}).innerText.includes("agent not configured")`)
		if eval[bool](t, ctx, `document.querySelector("[data-thread=t_gone]").innerText.includes("crashed")`) {
			t.Error("a thread whose agent is not configured says crashed")
		}
		until(t, ctx, "the agent is still ready", `document.querySelector('[data-agent=claude] .hint').textContent === "ready"`)
	})
	t.Run("it moves to another agent", func(t *testing.T) {
		// The thread offers the move, saying what the new agent will know;
		// moved with its last messages as context, its log stays and the
		// real Claude Code answers, having been given the earlier messages.
		until(t, ctx, "the move is offered, saying the new agent has no memory", `(() => { const m = document.querySelector("[data-move-thread]");
			return !!m && m.textContent.includes("not have the old agent") && m.querySelector("select").value === "claude"; })()`)
		shot(t, ctx, "desktop-move-thread")
		run(t, ctx, "move it with 5 messages", chromedp.SetValue(chromedp.CSS(`[aria-label="Messages to give as context"]`), "5"),
			click(chromedp.CSS(`[data-move]`)))
		until(t, ctx, "moved: the header names claude, the conversation says what it knows, no offer left", `!document.querySelector("[data-move-thread]") &&
			document.querySelector("[data-thread-where]").textContent.includes("claude") &&
			[...document.querySelectorAll(".notice")].some(n => n.textContent.includes("Moved from gone to claude") && n.textContent.includes("last 5 messages"))`)
		until(t, ctx, "the earlier message is still there", `[...document.querySelectorAll(".msg.user .bubble")].some(b => b.textContent === "hello")`)
		send(t, ctx, "what did I say before?")
		until(t, ctx, "the new agent answers, given the earlier messages, and its turn ends", pageHas(MovedAnswer)+` && window.parley.state.chat.turnActive === false`)
		until(t, ctx, "the list says claude", `(document.querySelector("[data-thread=t_gone]")||{innerText:""}).innerText.includes("claude")`)
		var got struct {
			Thread chat.Thread `json:"thread"`
		}
		r.rest(t, "GET", "/api/threads/t_gone", nil, &got)
		if got.Thread.Agent != "claude" {
			t.Errorf("the moved thread's agent: %q, want claude", got.Thread.Agent)
		}
		// Its Claude Code is ended: the live agents below are the other thread's.
		r.rest(t, "POST", "/api/threads/t_gone/unload", nil, nil)
		until(t, ctx, "the moved thread's agent is no longer live", `!document.querySelector("[data-live=t_gone]")`)
	})
	phone := browser(t, 390, 844)
	run(t, phone, "sign in on the phone", phoneViewport(), chromedp.Navigate(r.LoginURL()), chromedp.WaitVisible(chromedp.CSS(`.p-threads`)))
	until(t, phone, "the thread with usage is listed", `[...document.querySelectorAll(".p-thread")].some(b => b.textContent.includes("a title for the header"))`)
	run(t, phone, "open the thread with usage", chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll(".p-thread")].find(b => b.textContent.includes("a title for the header")).click()`))
	until(t, phone, "the phone is online", `window.parley.state.conn === "online"`)
	until(t, phone, "the thread's totals fit the phone", `(() => { const e = document.querySelector("[data-usage]"); return !!e && /turns? ·/.test(e.textContent) && e.getBoundingClientRect().right <= innerWidth; })()`)
	run(t, phone, "drop a file too large on the phone", chromedp.Evaluate[chromedp.Void](`(() => {
		const dt = new DataTransfer(); dt.items.add(new File([new Uint8Array(2 * 1024 * 1024)], "notes.txt", { type: "text/plain" }));
		document.querySelector("form.p-composer").dispatchEvent(new DragEvent("drop", { dataTransfer: dt, bubbles: true, cancelable: true }));
	})()`))
	until(t, phone, "the refusal fits the phone", `(() => { const e = document.querySelector(".attached [role=alert]");
		return !!e && e.textContent.includes("notes.txt") && e.getBoundingClientRect().right <= innerWidth + 1; })()`)
	run(t, phone, "open a thread whose agent is gone", chromedp.Evaluate[chromedp.Void](`location.hash = "#/t/t_gone2"`))
	until(t, phone, "the move is offered and fits the phone", `(() => { const m = document.querySelector("[data-move-thread]");
		return !!m && document.querySelector("[data-thread-title]").textContent === "agent gone too" &&
			m.getBoundingClientRect().right <= innerWidth + 1 && document.documentElement.scrollWidth <= innerWidth; })()`)
	shot(t, phone, "phone-move-thread")
	run(t, phone, "back to the list", click(chromedp.CSS(`button.back`)), chromedp.WaitVisible(chromedp.CSS(`.p-threads`)))
	t.Run("live agents", func(t *testing.T) {
		// The claude thread's Claude Code is loaded (idle): it is listed with
		// its memory, on the phone too; Unload ends it and the list empties.
		for _, c := range []context.Context{ctx, phone} {
			until(t, c, "the live agent with its memory", `(() => { const li = document.querySelector("[data-live]"); if (!li) return false;
				const m = /(\d+) MB/.exec(li.querySelector("[data-rss]").textContent); const r = li.getBoundingClientRect();
				return !!m && +m[1] > 10 && li.textContent.includes("claude") && r.right <= innerWidth + 1; })()`)
		}
		run(t, ctx, "unload it", click(chromedp.CSS(`[data-live] button.unload`)))
		until(t, ctx, "no live agent left, the thread unloaded", `!document.querySelector("[data-live]") &&
			[...document.querySelectorAll(".thread")].some(b => b.textContent.includes("a title for the header") && b.textContent.includes("unloaded"))`)
		var live struct {
			Processes []json.RawMessage `json:"processes"`
		}
		r.rest(t, "GET", "/api/processes", nil, &live)
		if len(live.Processes) != 0 {
			t.Errorf("GET /api/processes after the unload: %s, want none", live.Processes)
		}
	})
	t.Run("the first totals do not move the thread's buttons", func(t *testing.T) {
		// A turn held open by a question card has no totals yet; when it ends
		// they come into the header, and Archive (a click away) stays put.
		run(t, ctx, "open the new-thread form", click(chromedp.CSS(`.side button.primary`)))
		startThread(t, ctx, PromptAsk+" before any totals")
		until(t, ctx, "the question card is open", `!!document.querySelector(".card.question[data-state=open]")`)
		if eval[bool](t, ctx, `/turn/.test((document.querySelector("[data-usage]")||{textContent:""}).textContent)`) {
			t.Fatal("the thread has totals before its first turn ended")
		}
		before := eval[string](t, ctx, `JSON.stringify(document.querySelector("[data-action=archive]").getBoundingClientRect())`)
		run(t, ctx, "click Blue", click(chromedp.CSS(`.card.question[data-state=open] button.opt[title=cool]`)))
		until(t, ctx, "the thread's first totals", `/^1 turn · /.test((document.querySelector("[data-usage]")||{textContent:""}).textContent)`)
		if after := eval[string](t, ctx, `JSON.stringify(document.querySelector("[data-action=archive]").getBoundingClientRect())`); after != before {
			t.Errorf("Archive moved when the totals came: from %s to %s", before, after)
		}
	})
	t.Run("offline", func(t *testing.T) {
		r.stop()
		for _, c := range []context.Context{ctx, phone} {
			until(t, c, "the lists say they are old", `!!document.querySelector("[data-offline-note]") && document.querySelector("[data-offline-note]").getBoundingClientRect().right <= innerWidth`)
		}
	})
}
