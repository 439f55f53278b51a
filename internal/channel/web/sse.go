package web

import (
	"encoding/json"
	"io"
	"net/http"
	"time"
)

// keepAliveEvery is how often an event stream sends a comment, so proxies
// and the browser see an idle stream is alive.
const keepAliveEvery = 25 * time.Second

// eventStream writes server-sent events: the change stream (changes.go) and
// a terminal's screen (terminal.go) both speak through one. Each write has
// writeTimeout to reach the socket and is flushed at once; a write that
// fails means the reader is gone, and the handler returns.
type eventStream struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	tick *time.Ticker
}

// startEvents answers 200 with the headers of an event stream that no cache
// or proxy holds back. The handler selects on keepAlives and ends with stop.
func startEvents(w http.ResponseWriter) *eventStream {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return &eventStream{w: w, rc: http.NewResponseController(w), tick: time.NewTicker(keepAliveEvery)}
}

// send writes one event with v as its data, in JSON; false when the reader
// is gone.
func (e *eventStream) send(event string, v any) bool {
	b, err := json.Marshal(v)
	if err != nil {
		return false
	}
	return e.write("event: " + event + "\ndata: " + string(b) + "\n\n")
}

// keepAlives ticks when it is time for keepAlive.
func (e *eventStream) keepAlives() <-chan time.Time { return e.tick.C }

// keepAlive writes a comment, which the reader ignores.
func (e *eventStream) keepAlive() bool { return e.write(": keep-alive\n\n") }

func (e *eventStream) stop() { e.tick.Stop() }

func (e *eventStream) write(text string) bool {
	_ = e.rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := io.WriteString(e.w, text); err != nil {
		return false
	}
	return e.rc.Flush() == nil
}
