package daemon

import (
	"context"
	"log/slog"
	"time"

	"github.com/parleyhq/parley/internal/store"
)

// pruner deletes events older than limits.retain_events, at start and then
// every retain/24 (at least a minute, at most an hour). Shutdown stops it before
// the store closes.
type pruner struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func startPruner(st store.Store, retain time.Duration, now func() time.Time, log *slog.Logger) *pruner {
	ctx, cancel := context.WithCancel(context.Background())
	p := &pruner{cancel: cancel, done: make(chan struct{})}
	if retain <= 0 {
		close(p.done)
		return p
	}
	every := min(max(retain/24, time.Minute), time.Hour)
	go func() {
		defer close(p.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			n, err := st.PruneEvents(ctx, now().Add(-retain))
			switch {
			case err != nil && ctx.Err() == nil:
				log.Warn("pruning old events failed", "err", err)
			case n > 0:
				log.Info("pruned old events", "events", n, "older_than", retain.String())
			}
			select {
			case <-t.C:
			case <-ctx.Done():
				return
			}
		}
	}()
	return p
}

func (p *pruner) stop() {
	p.cancel()
	<-p.done
}
