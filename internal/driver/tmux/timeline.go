// The timeline of one send: each tmux call, each wait and what ended it, the
// /proc and screen checks, in order, with their times. Off unless the logger
// is at debug level or a benchmark asks (onTimeline): then the send carries a
// timeline in its context; when off, each mark is one context lookup.

package tmux

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// Step is one mark on a send's timeline: what happened, when it began (since
// the send began) and how long it took.
type Step struct {
	What string
	At   time.Duration
	Took time.Duration
}

type timeline struct {
	start time.Time
	mu    sync.Mutex
	steps []Step
}

type timelineKey struct{}

// startTimeline gives the send a timeline if anyone will read it.
func (s *session) startTimeline(ctx context.Context) (context.Context, *timeline) {
	if s.onTimeline == nil && !s.log.Enabled(ctx, slog.LevelDebug) {
		return ctx, nil
	}
	tl := &timeline{start: time.Now()}
	return context.WithValue(ctx, timelineKey{}, tl), tl
}

// endTimeline hands the finished timeline on: to the benchmark hook, and to
// the debug log.
func (s *session) endTimeline(ctx context.Context, tl *timeline, err error) {
	if tl == nil {
		return
	}
	tl.mu.Lock()
	steps := tl.steps
	tl.mu.Unlock()
	if s.onTimeline != nil {
		s.onTimeline(steps, err)
	}
	if s.log.Enabled(ctx, slog.LevelDebug) {
		var b strings.Builder
		for _, st := range steps {
			b.WriteString(st.At.Round(10*time.Microsecond).String() + " " + st.What + " " + st.Took.Round(10*time.Microsecond).String() + "; ")
		}
		s.log.Debug("send timeline", "took", time.Since(tl.start), "steps", b.String(), "err", err)
	}
}

// begin starts a mark: the returned func records it with what it was.
// Without a timeline it costs a context lookup.
func begin(ctx context.Context) func(what string) {
	tl, _ := ctx.Value(timelineKey{}).(*timeline)
	if tl == nil {
		return noMark
	}
	t0 := time.Now()
	return func(what string) {
		now := time.Now()
		tl.mu.Lock()
		tl.steps = append(tl.steps, Step{What: what, At: t0.Sub(tl.start), Took: now.Sub(t0)})
		tl.mu.Unlock()
	}
}

func noMark(string) {}
