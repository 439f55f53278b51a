package tmux

import (
	"context"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/testkit"
)

// After a crash, parley asks whether a message it was typing reached Claude
// Code in the pane: yes once the thread's own session's transcript holds it
// as the person's prompt, recorded after it went on its way; never "no" from
// a transcript that lacks it (the pane outlives parley, and keeps it later),
// and never yes from another session's.
func TestCheckDeliveryReadsTheTranscript(t *testing.T) {
	h := newHarness(t, scenario())
	before := time.Now()
	s, k := h.start("t-check")
	if err := h.prompt(s, "m1", "hello"); err != nil {
		t.Fatal(err)
	}
	waitTurns(t, k, 1)
	id := k.sessionID(t)
	checkIn := func(session, text string, at time.Time) (driver.Verdict, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		spec := h.spec("t-check")
		spec.ResumeID = session
		return h.drv.CheckDelivery(ctx, spec, driver.Sent{MessageID: "m1", Text: text, At: at})
	}
	check := func(text string, at time.Time) (driver.Verdict, string) { return checkIn(id, text, at) }
	// Claude Code writes its transcript in batches, after the turn.
	testkit.Eventually(t, 30*time.Second, func() bool { v, _ := check("hello", before); return v == driver.Delivered },
		"the transcript never held the prompt")
	for _, c := range []struct {
		name    string
		session string
		text    string
		at      time.Time
	}{
		{"a text never sent", id, "a message never sent", before},
		{"only an older record holds its text", id, "hello", time.Now().Add(time.Minute)},
		// Another session in the folder (another thread, the person's own
		// claude) that got the same words proves nothing of this one.
		{"another session holds its text", "00000000-0000-4000-8000-000000000000", "hello", before},
		{"no session known yet", "", "hello", before},
	} {
		if v, why := checkIn(c.session, c.text, c.at); v != driver.VerdictUnknown || why == "" {
			t.Errorf("%s: got %v (%q), want unknown with the reason", c.name, v, why)
		}
	}
}
