package acpagent

import (
	"context"
	"encoding/json"
	"log/slog"
	"reflect"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
)

func event(t *testing.T, typ string, payload any) chat.Event {
	t.Helper()
	b, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	return chat.Event{Type: typ, Thread: "t1", Seq: 3, Payload: b}
}

func TestToUpdate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ev   chat.Event
		want string // the session/update's JSON; "" = no update (a _parley/… notification)
	}{
		{"agent chunk", event(t, chat.TypeAgentChunk, chat.AgentChunk{Text: "hi", MessageID: "m1"}),
			`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"},"messageId":"m1"}`},
		{"thought", event(t, chat.TypeThoughtChunk, chat.ThoughtChunk{Text: "hmm"}),
			`{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"hmm"}}`},
		{"tool call", event(t, chat.TypeToolCall, chat.ToolCall{ToolCallID: "c1", Title: "Run ls", Kind: "execute", Status: "pending",
			Input: json.RawMessage(`{"command":"ls"}`), Locations: []chat.Location{{Path: "/w/a.go", Line: 4}}}),
			`{"sessionUpdate":"tool_call","toolCallId":"c1","title":"Run ls","kind":"execute","status":"pending",
			  "rawInput":{"command":"ls"},"locations":[{"path":"/w/a.go","line":4}]}`},
		{"tool call of an unknown kind and status", event(t, chat.TypeToolCall, chat.ToolCall{ToolCallID: "c2", Title: "X", Kind: "teleport", Status: "dreaming"}),
			`{"sessionUpdate":"tool_call","toolCallId":"c2","title":"X","kind":"other","status":"pending"}`},
		{"tool call update", event(t, chat.TypeToolCallUpdate, chat.ToolCallUpdate{ToolCallID: "c1", Status: "completed", Title: "Ran ls",
			Output: "a.go", Diffs: []chat.Diff{{Path: "/w/a.go", OldText: "x", NewText: "y"}, {Path: "/w/new.go", NewText: "z"}}}),
			`{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","title":"Ran ls","content":[
			  {"type":"content","content":{"type":"text","text":"a.go"}},
			  {"type":"diff","path":"/w/a.go","oldText":"x","newText":"y"},
			  {"type":"diff","path":"/w/new.go","newText":"z"}]}`},
		{"plan", event(t, chat.TypePlan, chat.Plan{Entries: []chat.PlanEntry{{Content: "read", Priority: "high", Status: "completed"}, {Content: "write", Status: "pending"}}}),
			`{"sessionUpdate":"plan","entries":[{"content":"read","priority":"high","status":"completed"},{"content":"write","priority":"medium","status":"pending"}]}`},
		{"available commands", event(t, chat.TypeCommands, chat.Commands{Commands: []chat.Command{{Name: "review", Description: "Review", Hint: "a file"}, {Name: "init", Description: "Init"}}}),
			`{"sessionUpdate":"available_commands_update","availableCommands":[
			  {"name":"review","description":"Review","input":{"hint":"a file"}},{"name":"init","description":"Init"}]}`},
		{"current mode", event(t, chat.TypeMode, chat.Mode{Current: "plan", Available: []chat.ModeOption{{ID: "plan", Name: "Plan"}}}),
			`{"sessionUpdate":"current_mode_update","currentModeId":"plan","_meta":{"parley/available":[{"id":"plan","name":"Plan"}]}}`},
		{"a mode event without a current mode", event(t, chat.TypeMode, chat.Mode{}), ""},
		{"turn status has no update", event(t, chat.TypeTurnStatus, map[string]string{"state": "busy"}), ""},
		{"a payload that does not decode", chat.Event{Type: chat.TypeToolCall, Payload: json.RawMessage(`{"tool_call_id":7}`)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, ok := toUpdate(tt.ev)
			if tt.want == "" {
				if ok {
					b, _ := json.Marshal(u)
					t.Fatalf("got update %s, want none", b)
				}
				return
			}
			if !ok {
				t.Fatalf("got no update, want %s", tt.want)
			}
			got, err := json.Marshal(u)
			if err != nil {
				t.Fatal(err)
			}
			var g, w any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tt.want), &w); err != nil {
				t.Fatalf("bad want: %v", err)
			}
			if !reflect.DeepEqual(g, w) {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// modeStore serves a thread's log for lastMode.
type modeStore struct {
	Store
	events []chat.Event
	reads  int
}

func (s *modeStore) Events(_ context.Context, _ chat.ThreadID, since int64, limit int) ([]chat.Event, error) {
	s.reads++
	var out []chat.Event
	for _, ev := range s.events {
		if ev.Seq > since && len(out) < limit {
			out = append(out, ev)
		}
	}
	return out, nil
}

func TestModesListTheLastModeEventsAvailableModes(t *testing.T) {
	t.Parallel()
	mode := func(seq int64, m chat.Mode) chat.Event {
		b, _ := json.Marshal(m)
		return chat.Event{Type: chat.TypeMode, Thread: "t1", Seq: seq, Payload: b}
	}
	st := &modeStore{events: []chat.Event{
		mode(1, chat.Mode{Current: "default", Available: []chat.ModeOption{{ID: "default", Name: "Default"}}}),
		{Type: chat.TypeAgentChunk, Thread: "t1", Seq: 2, Payload: json.RawMessage(`{"text":"hi"}`)},
		mode(3, chat.Mode{Current: "plan", Available: []chat.ModeOption{{ID: "default", Name: "Default"}, {ID: "plan", Name: "Plan", Description: "Think first"}}}),
		{Type: chat.TypeAgentChunk, Thread: "t1", Seq: 4, Payload: json.RawMessage(`{"text":"ok"}`)},
	}}
	a := &agent{d: Deps{Store: st}, log: slog.New(slog.DiscardHandler)}
	ctx := context.Background()
	got := a.modes(ctx, chat.Thread{ID: "t1", Mode: "plan"})
	if got == nil || got.CurrentModeId != "plan" {
		t.Fatalf("mode state: got %+v, want current plan", got)
	}
	if len(got.AvailableModes) != 2 || got.AvailableModes[1].Id != "plan" || got.AvailableModes[1].Name != "Plan" ||
		got.AvailableModes[1].Description == nil || *got.AvailableModes[1].Description != "Think first" {
		t.Errorf("available modes: got %+v, want default and plan from the last mode event", got.AvailableModes)
	}
	// The log is read once per thread; a mode event sent later replaces it.
	reads := st.reads
	a.rememberMode("t1", chat.Mode{Current: "default", Available: []chat.ModeOption{{ID: "default", Name: "Default"}}})
	if got := a.modes(ctx, chat.Thread{ID: "t1", Mode: "default"}); len(got.AvailableModes) != 1 || st.reads != reads {
		t.Errorf("after a newer mode event: got %+v (%d reads, want %d)", got.AvailableModes, st.reads, reads)
	}
	if a.modes(ctx, chat.Thread{ID: "t2"}) != nil {
		t.Errorf("a thread without a mode has a mode state")
	}
	// A thread whose agent never said its modes: the current one, an empty list.
	empty := &agent{d: Deps{Store: &modeStore{}}, log: slog.New(slog.DiscardHandler)}
	if got := empty.modes(ctx, chat.Thread{ID: "t3", Mode: "default"}); got == nil || got.AvailableModes == nil || len(got.AvailableModes) != 0 {
		t.Errorf("no mode event: got %+v, want current default and an empty list", got)
	}
}
