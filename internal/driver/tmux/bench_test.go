package tmux

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/tmux/pane"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/sendbench"
)

// BenchmarkSend measures Prompt → verified submitted against the real Claude
// Code TUI, one message after another, and counts false "submitted" (Prompt
// returned nil but the model never got exactly that text) and failures.
// Run: go test -run '^$' -bench Send -benchtime 200x ./internal/driver/tmux/
func BenchmarkSend(b *testing.B) {
	for _, bc := range sendbench.Cases {
		b.Run(bc.Name, func(b *testing.B) {
			h := newHarness(b, scenario())
			s, k := h.start("bench")
			ctx := context.Background()
			var lat []time.Duration
			falseSubmitted, failed := 0, 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				turns := k.turnCount()
				if bc.Staged != "" {
					if err := h.c.SendLiteral(ctx, s.name, bc.Staged); err != nil {
						b.Fatal(err)
					}
					if !testkit.Within(10*time.Second, func() bool {
						scr, err := s.capture(ctx)
						return err == nil && scr.Staged() == bc.Staged
					}) {
						b.Fatal("staged text never showed")
					}
				}
				text := bc.Text(i)
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
				if !testkit.Within(30*time.Second, func() bool { return countOf(h.personTexts(), text) > before }) {
					falseSubmitted++
					b.Logf("send %d: submitted, but the model never got exactly %q (got %q)", i, text, lastPersonText(h))
				}
				// Let the turn end and the screen settle before the next send.
				testkit.Within(30*time.Second, func() bool { return k.turnCount() > turns })
				testkit.Within(10*time.Second, func() bool {
					scr, err := s.capture(ctx)
					return err == nil && scr.HasBox() && scr.LastSpeaker() == pane.SpeakerStatus
				})
				b.StartTimer()
			}
			b.StopTimer()
			sendbench.Report(b, bc.Name, lat, falseSubmitted, failed)
		})
	}
}
