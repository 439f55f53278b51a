package remote

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/router"
)

// startAskResolver shows each route the thread its kept ask made on another
// machine, asking that machine each time one comes online: a hub killed
// before it heard a machine's answer learns it then, not only with the
// chat's next message. Then it shows the routes on that machine's threads
// their thread again (showAgain).
func startAskResolver(r *router.Router, h *cluster.Hub, log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		shown := map[string]time.Time{} // showAgain's: each online machine's link-up time
		for {
			changed := h.MachinesChanged()
			resolveAsks(ctx, r, h, log)
			showAgain(ctx, r, h, log, shown)
			select {
			case <-ctx.Done():
				return
			case <-changed:
			}
		}
	}()
	return func() { cancel(); <-done }
}

// resolveAsks asks each online machine which thread each kept ask for it
// made, and shows each route its thread.
func resolveAsks(ctx context.Context, r *router.Router, h *cluster.Hub, log *slog.Logger) {
	nodes, err := h.Nodes(ctx)
	if err != nil {
		return
	}
	for _, n := range nodes {
		if !n.Online {
			continue
		}
		asks, err := r.KeptAsks(ctx, n.Name)
		if err != nil {
			return // the router is closing
		}
		for from, ask := range asks {
			id, err := h.Source().AskedThread(ctx, n.Name, ask)
			switch {
			case errors.Is(err, chat.ErrNotFound):
				continue // not made there: the chat's next message asks
			case err != nil:
				log.Warn("cluster: which thread a kept ask made", "node", n.Name, "route", from.String(), "err", err)
				continue
			}
			if err := r.AskAnswered(ctx, from, ask, id); err != nil {
				log.Warn("cluster: show a route the thread its ask made", "route", from.String(), "err", err)
			}
		}
	}
}

// showAgain makes every connection of a route showing a thread of a machine
// that came online, or linked again, since the last look (shown: each online
// machine's link-up time) follow that thread (router.ShowAgain): one that
// opened while the machine was away, or right after the hub's restart,
// showed no thread, and follows it now with no reconnect: the thread, its
// log from the client's since, live events and receipts.
func showAgain(ctx context.Context, r *router.Router, h *cluster.Hub, log *slog.Logger, shown map[string]time.Time) {
	nodes, err := h.Nodes(ctx)
	if err != nil {
		return
	}
	back := map[string]bool{}
	for _, n := range nodes {
		switch {
		case !n.Online:
			delete(shown, n.Name)
		case !shown[n.Name].Equal(n.Since):
			shown[n.Name] = n.Since
			back[n.Name] = true
		}
	}
	if len(back) == 0 {
		return
	}
	err = r.ShowAgain(ctx, func(id chat.ThreadID) bool { return back[cluster.NodeOf(id)] })
	if err != nil && !errors.Is(err, chat.ErrClosed) {
		log.Warn("cluster: show the routes of a machine back their threads", "err", err)
	}
}
