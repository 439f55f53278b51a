package stream

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/testkit"
)

// recSink records every call, in order, for assertions.
type recSink struct {
	mu        sync.Mutex
	calls     []call
	onEvent   func(chat.Payload) // optional, called outside the lock
	withdrawn []string
	sessions  []string
	turns     []string
	exits     []error
	received  int
}

// call is one Sink call: an event, or "received", "session:<id>", "turn:<reason>",
// "withdrawn:<id>", "exited".
type call struct {
	what    string
	payload chat.Payload
	at      time.Time
}

func (r *recSink) add(c call) {
	c.at = time.Now()
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
}

func (r *recSink) Event(p chat.Payload) {
	r.add(call{what: p.EventType(), payload: p})
	if r.onEvent != nil {
		r.onEvent(p)
	}
}

func (r *recSink) Received() {
	r.mu.Lock()
	r.received++
	r.mu.Unlock()
	r.add(call{what: "received"})
}

func (r *recSink) SessionID(id string) {
	r.mu.Lock()
	r.sessions = append(r.sessions, id)
	r.mu.Unlock()
	r.add(call{what: "session:" + id})
}

func (r *recSink) TurnEnded(reason string) {
	r.mu.Lock()
	r.turns = append(r.turns, reason)
	r.mu.Unlock()
	r.add(call{what: "turn:" + reason})
}

func (r *recSink) CardWithdrawn(id string) {
	r.mu.Lock()
	r.withdrawn = append(r.withdrawn, id)
	r.mu.Unlock()
	r.add(call{what: "withdrawn:" + id})
}

func (r *recSink) Waiting(id, reason string) { r.add(call{what: "waiting:" + id + ":" + reason}) }

func (r *recSink) Exited(err error) {
	r.mu.Lock()
	r.exits = append(r.exits, err)
	r.mu.Unlock()
	r.add(call{what: "exited"})
}

func (r *recSink) snapshot() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]call(nil), r.calls...)
}

func (r *recSink) turnsEnded() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.turns...)
}

// waitTurns waits until n turns have ended and returns their stop reasons.
func (r *recSink) waitTurns(t *testing.T, n int) []string {
	t.Helper()
	testkit.Eventually(t, 30*time.Second, func() bool { return len(r.turnsEnded()) >= n },
		"want %d turns ended; calls: %v", n, testkit.Later(func() any { return r.whats() }))
	return r.turnsEnded()
}

// text adds up the agent_chunk texts since call index from.
func (r *recSink) text(from int) string {
	var sb strings.Builder
	for _, c := range r.snapshot()[from:] {
		if ch, ok := c.payload.(chat.AgentChunk); ok {
			sb.WriteString(ch.Text)
		}
	}
	return sb.String()
}

// count is how many agent_chunk events arrived.
func (r *recSink) chunks() int {
	n := 0
	for _, c := range r.snapshot() {
		if _, ok := c.payload.(chat.AgentChunk); ok {
			n++
		}
	}
	return n
}

// first returns the first payload of type T, waiting for it.
func first[T chat.Payload](t *testing.T, r *recSink) T {
	t.Helper()
	var got T
	testkit.Eventually(t, 30*time.Second, func() bool {
		for _, c := range r.snapshot() {
			if p, ok := c.payload.(T); ok {
				got = p
				return true
			}
		}
		return false
	}, "no %T event; calls: %v", got, testkit.Later(func() any { return r.whats() }))
	return got
}

// all returns the payloads of type T seen so far.
func all[T chat.Payload](r *recSink) []T {
	var out []T
	for _, c := range r.snapshot() {
		if p, ok := c.payload.(T); ok {
			out = append(out, p)
		}
	}
	return out
}

func (r *recSink) whats() []string {
	var out []string
	for _, c := range r.snapshot() {
		out = append(out, c.what)
	}
	return out
}
