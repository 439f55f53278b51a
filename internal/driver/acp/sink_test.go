package acp

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/parleyhq/parley/internal/chat"
)

// record is one thing a session reported, in order.
type record struct {
	Kind    string // event, received, session_id, turn_ended, withdrawn, exited
	Payload chat.Payload
	Value   string
}

// recSink records everything a session reports. Safe for concurrent use.
type recSink struct {
	mu   sync.Mutex
	recs []record
}

func (r *recSink) add(rec record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec)
}

func (r *recSink) Event(p chat.Payload) {
	r.add(record{Kind: "event", Payload: p, Value: p.EventType()})
}
func (r *recSink) Received()               { r.add(record{Kind: "received"}) }
func (r *recSink) SessionID(id string)     { r.add(record{Kind: "session_id", Value: id}) }
func (r *recSink) TurnEnded(reason string) { r.add(record{Kind: "turn_ended", Value: reason}) }
func (r *recSink) CardWithdrawn(id string) { r.add(record{Kind: "withdrawn", Value: id}) }
func (r *recSink) Waiting(id, reason string) {
	r.add(record{Kind: "waiting", Value: id + ": " + reason})
}
func (r *recSink) Exited(err error) { r.add(record{Kind: "exited", Value: fmt.Sprint(err)}) }
func (r *recSink) all() []record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]record(nil), r.recs...)
}
func (r *recSink) len() int             { r.mu.Lock(); defer r.mu.Unlock(); return len(r.recs) }
func (r *recSink) since(n int) []record { return r.all()[n:] }

// count counts records of a kind (and value, if not empty) from index n on.
func (r *recSink) count(n int, kind, value string) int {
	c := 0
	for _, rec := range r.since(n) {
		if rec.Kind == kind && (value == "" || rec.Value == value) {
			c++
		}
	}
	return c
}

// text joins the agent_chunk texts from index n on.
func (r *recSink) text(n int) string {
	var sb strings.Builder
	for _, rec := range r.since(n) {
		if c, ok := rec.Payload.(chat.AgentChunk); ok {
			sb.WriteString(c.Text)
		}
	}
	return sb.String()
}

// payloads returns the payloads of type T from index n on.
func payloads[T chat.Payload](r *recSink, n int) []T {
	var out []T
	for _, rec := range r.since(n) {
		if p, ok := rec.Payload.(T); ok {
			out = append(out, p)
		}
	}
	return out
}

// dump is the records as lines, for failure messages.
func (r *recSink) dump() string {
	var sb strings.Builder
	for i, rec := range r.all() {
		b, _ := json.Marshal(rec.Payload)
		fmt.Fprintf(&sb, "%3d %s %s %s\n", i, rec.Kind, rec.Value, b)
	}
	return sb.String()
}

// sessionID is the first session id reported.
func (r *recSink) sessionID() string {
	for _, rec := range r.all() {
		if rec.Kind == "session_id" {
			return rec.Value
		}
	}
	return ""
}
