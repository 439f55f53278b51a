package tmux

import (
	"context"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/testkit"
)

// After a crash, parley asks whether a message it was typing reached Claude
// Code in the pane: yes once a transcript in the thread's folder holds it as
// the person's prompt, recorded after parley stored it; never "no" from a
// transcript that lacks it (the pane outlives parley, and keeps it later).
func TestCheckDeliveryReadsTheTranscript(t *testing.T) {
	h := newHarness(t, scenario())
	before := time.Now()
	s, k := h.start("t-check")
	if err := h.prompt(s, "m1", "hello"); err != nil {
		t.Fatal(err)
	}
	waitTurns(t, k, 1)
	check := func(text string, at time.Time) (driver.Verdict, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return h.drv.CheckDelivery(ctx, h.spec("t-check"), driver.Sent{MessageID: "m1", Text: text, At: at})
	}
	// Claude Code writes its transcript in batches, after the turn.
	testkit.Eventually(t, 30*time.Second, func() bool { v, _ := check("hello", before); return v == driver.Delivered },
		"the transcript never held the prompt")
	for _, c := range []struct {
		name string
		text string
		at   time.Time
	}{
		{"a text never sent", "a message never sent", before},
		{"only an older record holds its text", "hello", time.Now().Add(time.Minute)},
	} {
		if v, why := check(c.text, c.at); v != driver.VerdictUnknown || why == "" {
			t.Errorf("%s: got %v (%q), want unknown with the reason", c.name, v, why)
		}
	}
}
