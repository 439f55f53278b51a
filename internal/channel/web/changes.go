package web

import (
	"fmt"
	"net/http"
	"time"
)

const (
	// maxWatchers bounds the open change streams (a tab keeps one).
	maxWatchers = 256
	// changesEvery is the least time between two change events on one stream:
	// a streaming answer changes its thread hundreds of times a second, a list
	// needs to hear it a few times.
	changesEvery = 250 * time.Millisecond
)

// handleChanges streams, as server-sent events, the ids of threads whose log
// grew: `event: threads` with `data: ["id", …]`. A thread list (the dashboard's
// side list) refetches /api/threads when it hears one, instead of polling. The
// stream says which threads changed, never what: what a page shows still comes
// from the store. The first event, `ready`, says the stream is live. At a
// cluster's hub, `event: machines` says a machine came online or went offline:
// the page refetches /api/agents (its agents' status) instead of polling.
func (s *Server) handleChanges(w http.ResponseWriter, r *http.Request) {
	// The bound counts this server's streams only: the fan-out's watchers
	// include parley's own (the push watcher, a node's relay).
	select {
	case s.changeSlots <- struct{}{}:
		defer func() { <-s.changeSlots }()
	default:
		httpError(w, http.StatusServiceUnavailable, fmt.Sprintf("too many change streams open (at most %d)", maxWatchers))
		return
	}
	watch := s.fanout.Watch()
	defer s.fanout.Unwatch(watch)
	var machines <-chan struct{} // nil (never ready) on one machine
	if s.opt.Cluster != nil {
		machines = s.opt.Cluster.MachinesChanged() // before ready: nothing after it is missed
	}
	events := startEvents(w)
	defer events.stop()
	if !events.send("ready", struct{}{}) {
		return
	}
	for {
		select {
		case <-watch.Ready():
			ids := watch.Take()
			if len(ids) == 0 {
				continue
			}
			if !events.send("threads", ids) {
				return
			}
			// Coalesce: what changes meanwhile goes in the next event.
			select {
			case <-time.After(changesEvery):
			case <-r.Context().Done():
				return
			case <-s.ctx.Done():
				return
			}
		case <-machines:
			machines = s.opt.Cluster.MachinesChanged()
			if !events.send("machines", struct{}{}) {
				return
			}
		case <-events.keepAlives():
			if !events.keepAlive() {
				return
			}
		case <-r.Context().Done():
			return
		case <-s.ctx.Done():
			return
		}
	}
}
