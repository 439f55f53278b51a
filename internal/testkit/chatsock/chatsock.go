// Package chatsock is the tests' view of a chat socket: it reads every frame in
// the background, keeps them all, and waits (with a deadline, never a sleep) for
// the one a test expects. Core, driver and e2e tests share it.
package chatsock

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
)

// Conn is a recording socket.
type Conn struct {
	t testing.TB
	c *client.Conn

	mu     sync.Mutex
	events []client.Event
	err    error
	notify chan struct{}
}

// Dial opens a socket on server with the token and starts recording; it is
// closed when the test ends.
func Dial(t testing.TB, server, token string, opt client.Options) *Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := client.Dial(ctx, server, token, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	r := &Conn{t: t, c: c, notify: make(chan struct{}, 1)}
	go r.read()
	return r
}

func (r *Conn) read() {
	for {
		ev, err := r.c.Next(context.Background())
		r.mu.Lock()
		if err != nil {
			r.err = err
		} else {
			r.events = append(r.events, ev)
		}
		r.mu.Unlock()
		select {
		case r.notify <- struct{}{}:
		default:
		}
		if err != nil {
			return
		}
	}
}

// Err is why the socket ended (nil while it is open).
func (r *Conn) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Client is the underlying socket.
func (r *Conn) Client() *client.Conn { return r.c }

// Send writes one input (a value to marshal, or raw bytes or a string as is).
func (r *Conn) Send(v any) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.c.Send(ctx, v); err != nil {
		r.t.Fatal(err)
	}
}

// Snapshot returns every frame received so far.
func (r *Conn) Snapshot() []client.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]client.Event(nil), r.events...)
}

// Len is the number of frames received so far.
func (r *Conn) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// Get returns frame i.
func (r *Conn) Get(i int) client.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.events[i]
}

// WaitFor waits until a frame at index from or later matches and returns its
// index; it fails the test when the socket ends or the deadline passes.
func (r *Conn) WaitFor(from int, within time.Duration, match func(client.Event) bool, what string) int {
	r.t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		for i := from; i < len(r.events); i++ {
			if match(r.events[i]) {
				r.mu.Unlock()
				return i
			}
		}
		err := r.err
		r.mu.Unlock()
		if err != nil {
			r.t.Fatalf("waiting for %s: socket ended: %v\n%s", what, err, Summary(r.Snapshot()))
		}
		select {
		case <-r.notify:
		case <-deadline.C:
			r.t.Fatalf("waiting for %s: not seen within %v\n%s", what, within, Summary(r.Snapshot()))
		}
	}
}

// WaitEnd waits until the socket has ended and returns why; nil means it
// was still open after within.
func (r *Conn) WaitEnd(within time.Duration) error {
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		if err := r.Err(); err != nil {
			return err
		}
		select {
		case <-r.notify:
		case <-deadline.C:
			return r.Err()
		}
	}
}

// Summary is a readable list of frames for failure messages.
func Summary(evs []client.Event) string {
	var b strings.Builder
	for i, e := range evs {
		if i == 200 {
			fmt.Fprintf(&b, "  … %d more\n", len(evs)-i)
			break
		}
		raw := string(e.Raw)
		if len(raw) > 300 {
			raw = raw[:300] + "…"
		}
		fmt.Fprintf(&b, "  %s\n", raw)
	}
	return b.String()
}

// FieldOf returns a top-level field of a frame.
func FieldOf(e client.Event, name string) any {
	var m map[string]any
	_ = json.Unmarshal(e.Raw, &m)
	return m[name]
}

// Type matches frames of a type.
func Type(typ string) func(client.Event) bool {
	return func(e client.Event) bool { return e.Type == typ }
}

// Field matches frames of a type whose field prints as want.
func Field(typ, name string, want any) func(client.Event) bool {
	return func(e client.Event) bool { return e.Type == typ && fmt.Sprint(FieldOf(e, name)) == fmt.Sprint(want) }
}

// Delivery matches a receipt of a message.
func Delivery(id, state string) func(client.Event) bool {
	return func(e client.Event) bool {
		return e.Type == chat.TypeDelivery && FieldOf(e, "message_id") == id && FieldOf(e, "state") == state
	}
}

// PromptDone matches the end of a message's turn with a stop reason.
func PromptDone(id, reason string) func(client.Event) bool {
	return func(e client.Event) bool {
		return e.Type == chat.TypePromptDone && FieldOf(e, "message_id") == id && FieldOf(e, "stop_reason") == reason
	}
}

// Msg is a message input.
func Msg(id, text string) map[string]any {
	return map[string]any{"type": "message", "message_id": id, "text": text}
}

// Chunks joins the agent_chunk texts of frames.
func Chunks(evs []client.Event) string {
	var b strings.Builder
	for _, e := range evs {
		if e.Type == chat.TypeAgentChunk {
			b.WriteString(fmt.Sprint(FieldOf(e, "text")))
		}
	}
	return b.String()
}
