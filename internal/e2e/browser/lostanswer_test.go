//go:build e2e

package browser

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// loseAnswers makes the tab lose the answers to its first n POSTs whose URLs
// match pattern (a wildcard as Fetch.enable takes it): each reaches parley,
// which answers it, and the answer is cut on its way back, as a dropped
// connection does. It returns how many it lost so far.
func loseAnswers(t testing.TB, ctx context.Context, pattern string, n int) (lost func() int) {
	t.Helper()
	lctx, stop := context.WithCancel(ctx)
	paused := chromedp.Events(lctx, fetch.RequestPaused)
	var mu sync.Mutex
	count := 0
	go func() {
		for ev, err := range paused {
			if err != nil {
				return
			}
			mu.Lock()
			lose := ev.Request != nil && ev.Request.Method == "POST" && count < n
			if lose {
				count++
			}
			mu.Unlock()
			if lose {
				chromedp.Call(ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: network.ErrorReasonConnectionReset})
				continue
			}
			chromedp.Call(ctx, fetch.ContinueResponse, fetch.ContinueResponseParams{RequestID: ev.RequestID})
		}
	}()
	t.Cleanup(func() {
		chromedp.Call(ctx, fetch.Disable, cdp.Empty{})
		stop()
	})
	if _, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: pattern, RequestStage: fetch.RequestStageResponse}}}); err != nil {
		t.Fatalf("lose answers: %v", err)
	}
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return count
	}
}

// An add whose answer is lost on its way back is sent again by the
// dashboard with the same id, and parley makes it once: one rule, listed
// once, and no error shown (the second answer is the first add's).
func TestADashboardAddWhoseAnswerIsLostIsMadeOnce(t *testing.T) {
	r := newRig(t)
	ctx := r.openRules(t)

	lost := loseAnswers(t, ctx, "*/api/rules*", 1)
	run(t, ctx, "write a rule and add it",
		fill(`New rule command`, "go test *"),
		chromedp.SendKeys(chromedp.CSS(`input[aria-label="New rule tool"]`), "Bash"),
		click(chromedp.CSS(`form.rule-add button[type=submit]`)))
	until(t, ctx, "rule 1 listed", `(document.querySelector(".rule-list li[data-rule='1'] .rule-text")||{textContent:""}).textContent === 'allow tool=Bash "go test *"'`)
	if n := lost(); n != 1 {
		t.Fatalf("%d answers lost, want 1: the test did not cut the first add's answer", n)
	}
	if got := r.rules(t); len(got) != 1 || got[0].Command != "go test *" {
		t.Fatalf("the API lists %+v, want the one rule, made once", got)
	}
	if got := eval[int](t, ctx, `document.querySelectorAll(".rule-list li[data-rule]").length`); got != 1 {
		t.Fatalf("%d rules listed, want 1", got)
	}
	if alert := eval[string](t, ctx, `(document.querySelector("details.rules [role=alert]")||{textContent:""}).textContent`); strings.TrimSpace(alert) != "" {
		t.Fatalf("an error is shown though the rule was made: %q", alert)
	}
}
