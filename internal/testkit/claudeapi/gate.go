package claudeapi

import (
	"net/http"
	"sync"
	"time"
)

// Gate holds a streamed reply part way until the test opens it, so that a
// test can look at what the agent shows of an unfinished answer without
// racing the answer's end: while the gate is shut, no final words can exist.
// A Gate is one-shot: once open it stays open, and a reply that reaches it
// later passes.
type Gate struct {
	after int // deltas streamed before the hold
	once  sync.Once
	open  chan struct{}
}

// NewGate returns a shut gate that holds a reply after its first after
// deltas (a whole, not streamed, reply is held before it is sent).
func NewGate(after int) *Gate {
	return &Gate{after: after, open: make(chan struct{})}
}

// Open lets the held reply go on; it is safe to call more than once.
func (g *Gate) Open() { g.once.Do(func() { close(g.open) }) }

// Held is a Reply paused by g (see Gate).
func Held(r Reply, g *Gate) Reply {
	r.Hold = g
	return r
}

// gatePing is how often a held stream sends a ping event, as the real API
// does on a quiet stream, so the client does not take it for a dead one.
const gatePing = time.Second

// wait blocks until g opens; false means the client went away first.
// ping, if not nil, is called every gatePing while it waits.
func (g *Gate) wait(r *http.Request, ping func()) bool {
	t := time.NewTicker(gatePing)
	defer t.Stop()
	for {
		select {
		case <-g.open:
			return true
		case <-r.Context().Done():
			return false
		case <-t.C:
			if ping != nil {
				ping()
			}
		}
	}
}
