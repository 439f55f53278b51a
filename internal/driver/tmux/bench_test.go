package tmux

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
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
			var timelines [][]Step
			s.onTimeline = func(steps []Step, err error) {
				if err == nil {
					timelines = append(timelines, steps)
				}
			}
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
			if b.N > 1 { // (go test cuts long benchmark logs short)
				fmt.Printf("%s: the timeline of a send, p50 of the sends with the most common steps\n%s", bc.Name, timelineTable(timelines))
			}
		})
	}
}

// timelineTable is the p50 timeline of the sends whose steps were the most
// common sequence: each step's start and length.
func timelineTable(timelines [][]Step) string {
	bySeq := map[string][][]Step{}
	best := ""
	for _, tl := range timelines {
		var names []string
		for _, st := range tl {
			names = append(names, st.What)
		}
		key := strings.Join(names, "|")
		bySeq[key] = append(bySeq[key], tl)
		if len(bySeq[key]) > len(bySeq[best]) {
			best = key
		}
	}
	same := bySeq[best]
	if len(same) == 0 {
		return "none"
	}
	p50 := func(f func([]Step) time.Duration) time.Duration {
		var ds []time.Duration
		for _, tl := range same {
			ds = append(ds, f(tl))
		}
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d sends had these steps\n| at (ms) | step | took (ms) |\n|---|---|---|\n", len(same), len(timelines))
	for i, st := range same[0] {
		fmt.Fprintf(&b, "| %.1f | %s | %.1f |\n", ms(p50(func(tl []Step) time.Duration { return tl[i].At })), st.What, ms(p50(func(tl []Step) time.Duration { return tl[i].Took })))
	}
	return b.String()
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// BenchmarkStoppedAgentFails measures a send to an agent stopped with
// SIGSTOP until its honest failure (ErrStopped, nothing typed).
// Run: go test -run '^$' -bench StoppedAgentFails -benchtime 20x ./internal/driver/tmux/
func BenchmarkStoppedAgentFails(b *testing.B) {
	h := newHarness(b, scenario())
	h.drv.StepTimeout = 0 // the default, as a daemon runs it
	s, _, agent := h.startWrapped("bench-stopped")
	cont := stopAgent(b, agent)
	defer cont()
	ctx := context.Background()
	var lat []time.Duration
	wrong := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		err := s.Prompt(ctx, driver.Prompt{MessageID: fmt.Sprint(i), Text: fmt.Sprint("to a stopped agent ", i)})
		lat = append(lat, time.Since(start))
		if !errors.Is(err, ErrStopped) {
			wrong++
			b.Logf("send %d: got %v, want %v", i, err, ErrStopped)
		}
	}
	b.StopTimer()
	sendbench.Report(b, "stopped", lat, 0, wrong)
}
