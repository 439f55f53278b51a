// Package geminiapi is a scripted stand-in for Google's Gemini API
// (generateContent and streamGenerateContent) on loopback, for tests,
// benchmarks and people running the real Gemini CLI offline. Scenarios are
// data: rules match the last user text or a functionResponse, and answer with
// streamed text, thoughts, function calls or errors. Requests that carry a
// response schema (Gemini CLI's model router and its next-speaker check) are
// answered with JSON that fits the schema, so the CLI never backs off. Every
// request is recorded so a test can assert what the agent sent.
package geminiapi

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
	// Schema overrides values in schema-constrained answers, by property name
	// (defaults: complexity_score 10, next_speaker "user").
	Schema map[string]any `json:"schema,omitempty"`
}

// Rule pairs a match with a reply. Times limits how often it may answer
// (0: no limit); a used-up rule no longer matches.
type Rule struct {
	Match Match `json:"match"`
	Reply Reply `json:"reply"`
	Times int   `json:"times,omitempty"`
}

// Match says which request a rule answers. Text fields compare against the
// last text part of the last user content; FunctionResponse matches a request
// whose last content answers a function call of that name. An empty Match
// matches any text prompt.
type Match struct {
	Exact            string `json:"exact,omitempty"`
	Prefix           string `json:"prefix,omitempty"`
	Contains         string `json:"contains,omitempty"`
	FunctionResponse string `json:"function_response,omitempty"`
}

// Part types of a reply.
const (
	PartText         = "text"
	PartThought      = "thought"
	PartFunctionCall = "function_call"
)

// Reply is what the stand-in answers: parts, or an error.
type Reply struct {
	Parts []Part `json:"parts,omitempty"`
	// FinishReason of the last chunk (default STOP).
	FinishReason string `json:"finish_reason,omitempty"`
	Error        *Error `json:"error,omitempty"`
	// Usage reported with the last chunk (defaults: 10 prompt, 5 candidates).
	PromptTokens     int `json:"prompt_tokens,omitempty"`
	CandidatesTokens int `json:"candidates_tokens,omitempty"`
}

// Part is one part of a reply.
type Part struct {
	Type string `json:"type"` // text, thought or function_call
	Text string `json:"text,omitempty"`
	// Chunks splits Text into this many streamed chunks (default 1).
	Chunks int `json:"chunks,omitempty"`
	// Delay is the pause before each chunk: the pace of the stream.
	Delay Duration `json:"delay,omitempty"`
	// Function call: its name and arguments.
	Name string          `json:"name,omitempty"`
	Args json.RawMessage `json:"args,omitempty"`
}

// Error is a failure the stand-in plays instead of (or in the middle of) a reply.
type Error struct {
	// Status is the HTTP status (e.g. 500); ignored when CutAfter is set.
	Status  int    `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
	// CutAfter > 0 streams that many chunks of the reply, then drops the connection.
	CutAfter int `json:"cut_after,omitempty"`
}

// Duration is a time.Duration written as "50ms" in JSON.
type Duration = standin.Duration

// Text is a reply of one text part, streamed in chunks at a pace.
func Text(text string, chunks int, delay time.Duration) Reply {
	return Reply{Parts: []Part{{Type: PartText, Text: text, Chunks: chunks, Delay: Duration(delay)}}}
}

// Call is a reply asking to call the named function (tool) with args.
func Call(name string, args any) Reply {
	b, err := json.Marshal(args)
	if err != nil {
		panic(fmt.Sprintf("geminiapi: function args: %v", err))
	}
	return Reply{Parts: []Part{{Type: PartFunctionCall, Name: name, Args: b}}}
}

// Shell is a reply asking Gemini CLI to run a command with run_shell_command.
func Shell(command, description string) Reply {
	return Call("run_shell_command", map[string]string{"command": command, "description": description})
}

// ReadFile is a reply asking Gemini CLI to read a file with read_file.
func ReadFile(path string) Reply {
	return Call("read_file", map[string]string{"file_path": path})
}

// LoadScenario reads a scenario from a JSON file.
func LoadScenario(path string) (Scenario, error) {
	var sc Scenario
	if err := standin.LoadJSON(path, &sc); err != nil {
		return Scenario{}, fmt.Errorf("geminiapi: load scenario: %w", err)
	}
	return sc, nil
}
