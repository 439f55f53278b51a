package stream

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/parleyhq/parley/internal/driver/claudecode"
)

// line is one stdout line of `claude -p --output-format stream-json`, decoded
// only as far as the driver needs. Fields not listed stay in the raw line.
type line struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`

	SessionID string `json:"session_id"`

	// system/init and system/status
	Model          string  `json:"model"`
	PermissionMode *string `json:"permissionMode"`

	// stream_event
	Event *streamEvent `json:"event"`

	// assistant and user
	Message         *message        `json:"message"`
	ParentToolUseID *string         `json:"parent_tool_use_id"`
	IsReplay        bool            `json:"isReplay"`
	ToolUseResult   json.RawMessage `json:"tool_use_result"`

	// result
	IsError      bool    `json:"is_error"`
	StopReason   *string `json:"stop_reason"`
	TotalCostUSD float64 `json:"total_cost_usd"`
	Usage        *usage  `json:"usage"`
	ModelUsage   map[string]struct {
		ContextWindow int64 `json:"contextWindow"`
	} `json:"modelUsage"`
	Result        string   `json:"result"`
	Errors        []string `json:"errors"`
	TerminalState string   `json:"terminal_reason"`

	// control_request, control_response, control_cancel_request
	RequestID string           `json:"request_id"`
	Request   *controlRequest  `json:"request"`
	Response  *controlResponse `json:"response"`
}

type streamEvent struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
	Delta *struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Thinking string `json:"thinking"`
	} `json:"delta"`
	Message *struct {
		ID string `json:"id"`
	} `json:"message"`
}

type message = claudecode.Message

type usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
}

type controlRequest struct {
	Subtype               string          `json:"subtype"`
	ToolName              string          `json:"tool_name"`
	DisplayName           string          `json:"display_name"`
	Description           string          `json:"description"`
	Input                 json.RawMessage `json:"input"`
	ToolUseID             string          `json:"tool_use_id"`
	PermissionSuggestions json.RawMessage `json:"permission_suggestions"`
	BlockedPath           string          `json:"blocked_path"`
}

type controlResponse struct {
	Subtype   string          `json:"subtype"` // success or error
	RequestID string          `json:"request_id"`
	Response  json.RawMessage `json:"response"`
	Error     string          `json:"error"`
}

// errNotJSON marks a stdout line that is not a JSON object (Claude Code can
// print a stray warning there).
var errNotJSON = errors.New("stream: not a JSON object")

// decodeLine decodes one stdout line. It fails only when the line is not a
// JSON object with a type; unknown types decode fine and are the caller's call.
func decodeLine(b []byte) (line, error) {
	var l line
	if len(b) == 0 || b[0] != '{' {
		return l, errNotJSON
	}
	if err := json.Unmarshal(b, &l); err != nil {
		return l, fmt.Errorf("stream: decode line: %w", err)
	}
	if l.Type == "" {
		return l, fmt.Errorf("stream: decode line: no type")
	}
	return l, nil
}

// Messages parley writes to the agent's stdin.

type userLine struct {
	Type            string      `json:"type"`
	Message         userMessage `json:"message"`
	ParentToolUseID *string     `json:"parent_tool_use_id"`
	SessionID       string      `json:"session_id"`
}

type userMessage struct {
	Role    string `json:"role"`
	Content any    `json:"content"` // a string, or blocks when images come along
}

type controlRequestLine struct {
	Type      string         `json:"type"`
	RequestID string         `json:"request_id"`
	Request   map[string]any `json:"request"`
}

type controlResponseLine struct {
	Type     string             `json:"type"`
	Response controlResponseOut `json:"response"`
}

type controlResponseOut struct {
	Subtype   string `json:"subtype"`
	RequestID string `json:"request_id"`
	Response  any    `json:"response,omitempty"`
	Error     string `json:"error,omitempty"`
}

// permissionResult is the answer to can_use_tool.
type permissionResult struct {
	Behavior           string          `json:"behavior"` // allow or deny
	UpdatedInput       json.RawMessage `json:"updatedInput,omitempty"`
	UpdatedPermissions json.RawMessage `json:"updatedPermissions,omitempty"`
	Message            string          `json:"message,omitempty"`
}
