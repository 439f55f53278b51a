package web

import (
	"encoding/json"
	"fmt"
	"io"
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
	// changesKeepAlive is how often an idle stream sends a comment, so proxies
	// and the browser see it is alive.
	changesKeepAlive = 25 * time.Second
)

// handleChanges streams, as server-sent events, the ids of threads whose log
// grew: `event: threads` with `data: ["id", …]`. A thread list (the dashboard's
// side list) refetches /api/threads when it hears one, instead of polling. The
// stream says which threads changed, never what: what a page shows still comes
// from the store. The first event, `ready`, says the stream is live. At a
// cluster's hub, `event: machines` says a machine came online or went offline:
// the page refetches /api/agents (its agents' status) instead of polling.
func (s *Server) handleChanges(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
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
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	var machines <-chan struct{} // nil (never ready) on one machine
	if s.opt.Cluster != nil {
		machines = s.opt.Cluster.MachinesChanged() // before ready: nothing after it is missed
	}
	w.WriteHeader(http.StatusOK)
	write := func(text string) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(writeTimeout))
		if _, err := io.WriteString(w, text); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	send := func(event, data string) bool { return write("event: " + event + "\ndata: " + data + "\n\n") }
	if !send("ready", "{}") {
		return
	}
	keepAlive := time.NewTicker(changesKeepAlive)
	defer keepAlive.Stop()
	for {
		select {
		case <-watch.Ready():
			ids := watch.Take()
			if len(ids) == 0 {
				continue
			}
			b, err := json.Marshal(ids)
			if err != nil || !send("threads", string(b)) {
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
			if !send("machines", "{}") {
				return
			}
		case <-keepAlive.C:
			if !write(": keep-alive\n\n") {
				return
			}
		case <-r.Context().Done():
			return
		case <-s.ctx.Done():
			return
		}
	}
}
