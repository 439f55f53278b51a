package stream

import (
	"log/slog"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
)

// A turn that used two models (Claude Code makes titles with Haiku) reports
// the context window of the model in force, which Claude Code names by full
// id in modelUsage and parley shows as its list entry: not none (then the
// context label lost its window, "context 12k", and came back as "of 1.0M"
// on the next single-model turn).
func TestContextWindowIsTheModelInForcesWithTwoModelsUsed(t *testing.T) {
	t.Parallel()
	sink := &recSink{}
	s := newSession(sink, slog.New(slog.DiscardHandler), true)
	defer close(s.gone)
	s.mu.Lock()
	s.models = []chat.ModeOption{{ID: "default", Name: "Default (recommended)", Description: "Use the default model (currently Opus 4.8 (1M context))"},
		{ID: "opus[1m]", Name: "Opus", Description: "Opus 4.8 with 1M context · Best for everyday, complex tasks"},
		{ID: "haiku", Name: "Haiku", Description: "Haiku 4.5 · Fastest for quick answers"}}
	s.turns = 1
	s.mu.Unlock()
	s.handleLine([]byte(`{"type":"system","subtype":"init","session_id":"s1","model":"claude-opus-4-8[1m]","permissionMode":"default"}`))
	s.handleLine([]byte(`{"type":"result","subtype":"success","total_cost_usd":0.001,"usage":{"input_tokens":10,"output_tokens":5},
		"modelUsage":{"claude-haiku-4-5-20251001":{"contextWindow":200000},"claude-opus-4-8[1m]":{"contextWindow":1000000}}}`))
	if u := first[chat.Usage](t, sink); u.ContextWindow != 1000000 {
		t.Errorf("context window %d, want 1000000 (Opus 4.8 with 1M context, the model in force)", u.ContextWindow)
	}
}
