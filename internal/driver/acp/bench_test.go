package acp

import (
	"encoding/json"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
)

// BenchmarkMapUpdate measures decoding and mapping one agent_message_chunk,
// the update a streamed reply is made of.
func BenchmarkMapUpdate(b *testing.B) {
	raw := []byte(`{"sessionId":"0ec78882-638e-43a8-b2f6-6154176cd497","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hello from the stand-in, streamed in pieces."}}}`)
	m := newMapper()
	b.ReportAllocs()
	for b.Loop() {
		var n sdk.SessionNotification
		if err := json.Unmarshal(raw, &n); err != nil {
			b.Fatal(err)
		}
		if ps := m.update(n.Update); len(ps) != 1 {
			b.Fatalf("payloads: %d", len(ps))
		}
	}
}
