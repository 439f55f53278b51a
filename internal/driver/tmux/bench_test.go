package tmux

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/tmux/pane"
)

// BenchmarkSend measures Prompt → verified submitted against the real Claude
// Code TUI, one message after another, and counts false "submitted" (Prompt
// returned nil but the model never got exactly that text) and failures.
// Run: go test -run '^$' -bench Send -benchtime 200x ./internal/driver/tmux/
func BenchmarkSend(b *testing.B) {
	cases := []struct {
		name   string
		text   func(i int) string
		staged string // typed into the box by hand before each send
	}{
		{name: "clean", text: func(i int) string { return fmt.Sprintf("bench message %d", i) }},
		{name: "staged-text", text: func(i int) string { return fmt.Sprintf("bench message %d", i) }, staged: "left in the box"},
		{name: "repeated-yes", text: func(int) string { return "yes" }},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			h := newHarness(b, scenario())
			s, k := h.start("bench")
			ctx := context.Background()
			var lat []time.Duration
			falseSubmitted, failed := 0, 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				turns := k.turnCount()
				if bc.staged != "" {
					if err := h.c.SendLiteral(ctx, s.name, bc.staged); err != nil {
						b.Fatal(err)
					}
					if !poll(10*time.Second, func() bool {
						scr, err := s.capture(ctx)
						return err == nil && scr.Staged() == bc.staged
					}) {
						b.Fatal("staged text never showed")
					}
				}
				text := bc.text(i)
				before := countOf(h.personTexts(), text)
				b.StartTimer()
				start := time.Now()
				err := s.Prompt(ctx, driver.Prompt{MessageID: fmt.Sprint(i), Text: text})
				d := time.Since(start)
				b.StopTimer()
				if err != nil {
					failed++
					b.Logf("send %d failed: %v", i, err)
					continue
				}
				lat = append(lat, d)
				if !poll(30*time.Second, func() bool { return countOf(h.personTexts(), text) > before }) {
					falseSubmitted++
					b.Logf("send %d: submitted, but the model never got exactly %q (got %q)", i, text, lastPersonText(h))
				}
				// Let the turn end and the screen settle before the next send.
				poll(30*time.Second, func() bool { return k.turnCount() > turns })
				poll(10*time.Second, func() bool {
					scr, err := s.capture(ctx)
					return err == nil && scr.HasBox() && scr.LastSpeaker() == pane.SpeakerStatus
				})
				b.StartTimer()
			}
			b.StopTimer()
			slices.Sort(lat)
			if len(lat) > 0 {
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds())/1000, "p99-ms")
			}
			b.ReportMetric(float64(falseSubmitted), "false-submitted")
			b.ReportMetric(float64(failed), "failed")
			b.Logf("%s: %d sends, latencies %s", bc.name, b.N, summary(lat))
		})
	}
}

func summary(lat []time.Duration) string {
	if len(lat) == 0 {
		return "none"
	}
	var parts []string
	for _, q := range []int{0, 50, 90, 99, 100} {
		i := min(len(lat)-1, len(lat)*q/100)
		parts = append(parts, fmt.Sprintf("p%d=%v", q, lat[i].Round(time.Millisecond)))
	}
	return strings.Join(parts, " ")
}
