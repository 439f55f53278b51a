// Package claudeapi is a scripted stand-in for Anthropic's Messages API on
// loopback, for tests, benchmarks and people debugging the real Claude Code
// CLI offline. Scenarios are data: rules match the last user-role message's
// last text block or a tool result, and answer with streamed text, tool uses,
// thinking, or errors. Every request is recorded so a test can assert what the
// agent sent. It knows nothing about how Claude Code is driven (stream-json or
// a terminal), so every transport's tests can share it.
package claudeapi

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/parleyhq/parley/internal/testkit/standin"
)

// Scenario is a script: the first rule that matches a request answers it.
// A request nothing matches gets Default, or a text reply that says so.
type Scenario struct {
	Name    string `json:"name,omitempty"`
	Rules   []Rule `json:"rules"`
	Default *Reply `json:"default,omitempty"`
}

// Rule pairs a match with a reply. Times limits how often it may answer
// (0: no limit); a used-up rule no longer matches.
type Rule struct {
	Match Match `json:"match"`
	Reply Reply `json:"reply"`
	Times int   `json:"times,omitempty"`
}

// Match says which request a rule answers. Text fields compare against the
// last text block of the last user-role message (after dropping
// <system-reminder> blocks); ToolResult matches a tool result not yet answered,
// by the tool_use's name or id. Exactly one field should be set; an empty Match
// matches any text prompt.
type Match struct {
	Exact      string `json:"exact,omitempty"`
	Prefix     string `json:"prefix,omitempty"`
	Contains   string `json:"contains,omitempty"`
	ToolResult string `json:"tool_result,omitempty"`
}

// Reply is what the stand-in answers: content blocks, or an error.
type Reply struct {
	Blocks []Block `json:"blocks,omitempty"`
	// StopReason defaults to "tool_use" when a block is a tool use, else "end_turn".
	StopReason string `json:"stop_reason,omitempty"`
	Error      *Error `json:"error,omitempty"`
	// Wait is a pause before the answer begins (a model slow to start): the
	// request is in the log, and nothing is answered yet.
	Wait Duration `json:"wait,omitempty"`
	// Usage reported in message_start / message_delta (defaults: 10 in, 5 out).
	InputTokens  int `json:"input_tokens,omitempty"`
	OutputTokens int `json:"output_tokens,omitempty"`
	// Hold pauses the reply part way until the test opens the gate (Go
	// scenarios only; see Gate).
	Hold *Gate `json:"-"`
}

// Block types.
const (
	BlockText     = "text"
	BlockToolUse  = "tool_use"
	BlockThinking = "thinking"
)

// Block is one content block of a reply.
type Block struct {
	Type string `json:"type"` // text, tool_use or thinking
	Text string `json:"text,omitempty"`
	// Chunks splits Text (or the tool input's JSON) into this many deltas (default 1).
	Chunks int `json:"chunks,omitempty"`
	// Delay is the pause before each delta: the pace of the stream.
	Delay Duration `json:"delay,omitempty"`
	// Tool use: the tool's name, its id (default: a fresh toolu_… id) and input.
	Name  string          `json:"name,omitempty"`
	ID    string          `json:"id,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

// Error is a failure the stand-in plays instead of (or in the middle of) a reply.
type Error struct {
	// Status is the HTTP status (e.g. 529). Zero with CutAfter or InStream set.
	Status int `json:"status,omitempty"`
	// Type is the API error type (default overloaded_error), Message its words.
	Type    string `json:"type,omitempty"`
	Message string `json:"message,omitempty"`
	// InStream sends the error as an SSE error event after CutAfter deltas.
	InStream bool `json:"in_stream,omitempty"`
	// CutAfter > 0 streams the reply's blocks and drops the connection after
	// that many deltas (a cut stream), unless InStream is set.
	CutAfter int `json:"cut_after,omitempty"`
}

// Duration is a time.Duration written as "50ms" in JSON.
type Duration = standin.Duration

// Text is a reply of one text block, streamed in chunks at a pace.
func Text(text string, chunks int, delay time.Duration) Reply {
	return Reply{Blocks: []Block{{Type: BlockText, Text: text, Chunks: chunks, Delay: Duration(delay)}}}
}

// ToolUse is a reply of one tool use with the given input (marshalled to JSON).
func ToolUse(name string, input any) Reply {
	b, err := json.Marshal(input)
	if err != nil {
		panic(fmt.Sprintf("claudeapi: tool input: %v", err))
	}
	return Reply{Blocks: []Block{{Type: BlockToolUse, Name: name, Input: b}}}
}

// Bash is a reply asking to run a shell command with the Bash tool.
func Bash(command, description string) Reply {
	return ToolUse("Bash", map[string]string{"command": command, "description": description})
}

// LoadScenario reads a scenario from a JSON file.
func LoadScenario(path string) (Scenario, error) {
	var sc Scenario
	if err := standin.LoadJSON(path, &sc); err != nil {
		return Scenario{}, fmt.Errorf("claudeapi: load scenario: %w", err)
	}
	return sc, nil
}
