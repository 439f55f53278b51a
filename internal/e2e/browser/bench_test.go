//go:build e2e

package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/sqlite"
)

// seedThread writes a thread of n events (messages with receipts, Markdown answers
// with code, tool calls and their results) into the data folder's store and attaches
// the web route chatID to it, before parley serve starts.
// It returns how many conversation items the dashboard folds the events into.
func seedThread(tb testing.TB, dataDir, cwd, chatID string, n int) (chat.ThreadID, int) {
	tb.Helper()
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(dataDir, "parley.db"), nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer st.Close()
	now := time.Now().Add(-time.Hour)
	id := chat.ThreadID("t_seed_" + chatID)
	th := chat.Thread{ID: id, Agent: "claude", Cwd: cwd, Title: "seeded " + chatID, State: chat.ThreadUnloaded,
		CreatedAt: now, UpdatedAt: now, LastSeq: int64(n)}
	var evs []chat.Event
	items := 0
	from := chat.RouteKey{Channel: "web", Chat: chatID}
	for i := 0; len(evs) < n; i++ {
		mid := fmt.Sprintf("m_seed_%d", i)
		tool := fmt.Sprintf("toolu_seed_%d", i)
		ps := []chat.Payload{
			chat.UserMessage{MessageID: mid, Text: fmt.Sprintf("question number %d", i), From: from},
			chat.Delivery{MessageID: mid, State: chat.DeliverySubmitted},
			chat.ToolCall{ToolCallID: tool, Title: "ls -la", Kind: "execute", Status: "in_progress", Input: json.RawMessage(`{"command":"ls -la"}`)},
			chat.ToolCallUpdate{ToolCallID: tool, Status: "completed", Output: strings.Repeat("file.go\n", 5)},
			chat.AgentChunk{Text: fmt.Sprintf("Answer **%d**:\n\n```go\nfunc f%d() int { return %d }\n```\n", i, i, i)},
			chat.PromptDone{StopReason: chat.StopEndTurn, MessageID: mid},
		}
		for _, p := range ps {
			if len(evs) == n {
				break
			}
			ev, err := chat.NewEvent(id, p, now.Add(time.Duration(len(evs))*time.Millisecond))
			if err != nil {
				tb.Fatal(err)
			}
			ev.Seq = int64(len(evs) + 1)
			switch p.(type) {
			case chat.UserMessage, chat.ToolCall, chat.AgentChunk:
				items++
			}
			evs = append(evs, ev)
		}
	}
	if err := st.Commit(ctx, store.Batch{Thread: &th, Events: evs}); err != nil {
		tb.Fatal(err)
	}
	if err := st.AttachRoute(ctx, from, id); err != nil {
		tb.Fatal(err)
	}
	return id, items
}

// benchRig is a rig whose store holds seeded threads and replays them whole.
// It returns the rig and the number of conversation items per chat.
func benchRig(b *testing.B, threads map[string]int) (*rig, map[string]int) {
	b.Helper()
	items := map[string]int{}
	r := newRigWith(b, func(dataDir, cwd string) {
		for chatID, n := range threads {
			_, items[chatID] = seedThread(b, dataDir, cwd, chatID, n)
		}
	}, "[limits]\nreplay_tail = 5000\n")
	return r, items
}

// BenchmarkFirstLoad is a first visit on loopback: a fresh browser context opens
// the printed link on a chat of 20 events, until the chat is interactive.
func BenchmarkFirstLoad(b *testing.B) {
	r, _ := benchRig(b, map[string]int{"small": 20})
	var bytes float64
	for b.Loop() {
		b.StopTimer()
		tab, closeTab := startBrowser(b, 1280, 860) // a fresh profile: nothing cached, no cookie
		b.StartTimer()
		run(b, tab, "first load", chromedp.Navigate(r.LoginURL()+"#/c/small"))
		until(b, tab, "interactive", `!!window.parley && window.parley.state.chat.caughtUp && !!document.querySelector("textarea[aria-label=Message]") && document.querySelectorAll(".msg.user").length > 0`)
		b.StopTimer()
		bytes = eval[float64](b, tab, `performance.getEntriesByType("navigation").concat(performance.getEntriesByType("resource")).reduce((n, e) => n + e.transferSize, 0)`)
		closeTab()
		b.StartTimer()
	}
	b.ReportMetric(bytes, "bytes/load")
}

// BenchmarkRender2000 opens a 2,000-event thread (time until its newest item is on
// screen and the page is live), then scrolls from the newest to the oldest item a
// screen per frame, as a person reading back does (time until the first is drawn).
func BenchmarkRender2000(b *testing.B) {
	r, items := benchRig(b, map[string]int{"big": 2000})
	ctx := browser(b, 1280, 860)
	run(b, ctx, "log in", chromedp.Navigate(r.LoginURL()), chromedp.WaitVisible(chromedp.CSS(`.side`)))
	var show, scroll time.Duration
	var frames float64
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		run(b, ctx, "leave", chromedp.Navigate("about:blank"))
		b.StartTimer()
		start := time.Now()
		run(b, ctx, "open", chromedp.Navigate(r.Base+"/#/c/big"))
		until(b, ctx, "the newest item is shown", `window.parley.state.chat.caughtUp && [...document.querySelectorAll(".msg.user .bubble")].some(e => e.textContent === "question number 333")`)
		show += time.Since(start)
		ms := eval[float64](b, ctx, `new Promise(done => {
			const el = document.querySelector(".scroll"); el.scrollTop = el.scrollHeight;
			const t0 = performance.now();
			const all = () => document.querySelectorAll(".conv > .msg, .conv > .tool").length === `+fmt.Sprint(items["big"])+`;
			let frames = 0; const step = () => { el.scrollTop -= el.clientHeight; frames++; window.__frames = frames;
				if (el.scrollTop === 0 && all()) done(performance.now() - t0); else requestAnimationFrame(step); };
			requestAnimationFrame(step); })`)
		scroll += time.Duration(ms * float64(time.Millisecond))
		frames += eval[float64](b, ctx, `window.__frames`)
	}
	n := float64(b.N)
	b.ReportMetric(float64(show.Milliseconds())/n, "ms-to-show")
	b.ReportMetric(float64(scroll.Milliseconds())/n, "ms-to-scroll")
	b.ReportMetric(float64(scroll.Milliseconds())/frames, "ms/frame")
}
