package chat

import (
	"encoding/json"
	"fmt"
)

// Payload is the type-specific part of an event; docs/protocol.md lists them all.
type Payload interface{ EventType() string }

// Event types written to a thread's log.
const (
	TypeUserMessage        = "user_message"
	TypeDelivery           = "delivery"
	TypeAgentChunk         = "agent_chunk"
	TypeThoughtChunk       = "thought_chunk"
	TypeToolCall           = "tool_call"
	TypeToolCallUpdate     = "tool_call_update"
	TypePlan               = "plan"
	TypePermissionRequest  = "permission_request"
	TypePermissionResolved = "permission_resolved"
	TypeQuestion           = "question"
	TypeQuestionResolved   = "question_resolved"
	TypeMode               = "mode"
	TypeCommands           = "commands"
	TypeUsage              = "usage"
	TypeTurnStatus         = "turn_status"
	TypePromptDone         = "prompt_done"
	TypeError              = "error"
	TypeSessionInfo        = "session"
)

// Connection-level event types (not in any log).
const (
	TypeConfig     = "config"
	TypeThread     = "thread"
	TypeReplayDone = "replay_done"
	// TypeHistoryPruned says the replay skips events that limits.retain_events
	// removed (docs/protocol.md, "Retention").
	TypeHistoryPruned = "history_pruned"
	TypePong          = "pong"
)

// Stop reasons of prompt_done.
const (
	StopEndTurn   = "end_turn"
	StopCancelled = "cancelled"
	StopMaxTokens = "max_tokens"
	StopRefusal   = "refusal"
	StopError     = "error"
)

type UserMessage struct {
	MessageID string   `json:"message_id"`
	Text      string   `json:"text"`
	From      RouteKey `json:"from"`
}

type Delivery struct {
	MessageID string `json:"message_id"`
	State     string `json:"state"`
	Detail    string `json:"detail,omitempty"`
}

type AgentChunk struct {
	Text      string `json:"text"`
	MessageID string `json:"message_id,omitempty"` // the agent's message id
}

type ThoughtChunk struct {
	Text string `json:"text"`
}

// Tool kinds follow ACP: read, edit, delete, move, search, execute, think, fetch, other.
type ToolCall struct {
	ToolCallID string          `json:"tool_call_id"`
	Title      string          `json:"title"`
	Kind       string          `json:"kind"`
	Status     string          `json:"status"` // pending, in_progress, completed, failed
	Input      json.RawMessage `json:"input,omitempty"`
	Locations  []Location      `json:"locations,omitempty"`
}

type Location struct {
	Path string `json:"path"`
	Line int    `json:"line,omitempty"`
}

type ToolCallUpdate struct {
	ToolCallID string     `json:"tool_call_id"`
	Status     string     `json:"status,omitempty"`
	Title      string     `json:"title,omitempty"`
	Output     string     `json:"output,omitempty"`
	Diffs      []Diff     `json:"diffs,omitempty"`
	Locations  []Location `json:"locations,omitempty"`
}

type Diff struct {
	Path    string `json:"path"`
	OldText string `json:"old_text,omitempty"`
	NewText string `json:"new_text"`
}

type Plan struct {
	Entries []PlanEntry `json:"entries"`
}

type PlanEntry struct {
	Content  string `json:"content"`
	Priority string `json:"priority,omitempty"`
	Status   string `json:"status"`
}

// Permission option kinds.
const (
	OptionAllowOnce    = "allow_once"
	OptionAllowAlways  = "allow_always"
	OptionRejectOnce   = "reject_once"
	OptionRejectAlways = "reject_always"
)

type PermissionRequest struct {
	RequestID string             `json:"request_id"`
	Tool      PermissionTool     `json:"tool"`
	Options   []PermissionOption `json:"options"`
}

type PermissionTool struct {
	Name       string          `json:"name"`
	Title      string          `json:"title"`
	Input      json.RawMessage `json:"input,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

type PermissionOption struct {
	ID    string `json:"id"`
	Label string `json:"label"`
	Kind  string `json:"kind"`
}

type PermissionResolved struct {
	RequestID string    `json:"request_id"`
	OptionID  string    `json:"option_id,omitempty"`
	Message   string    `json:"message,omitempty"`
	Cancelled bool      `json:"cancelled,omitempty"`
	By        *RouteKey `json:"by,omitempty"`
}

type Question struct {
	RequestID string         `json:"request_id"`
	Questions []QuestionItem `json:"questions"`
}

type QuestionItem struct {
	Question    string           `json:"question"`
	Header      string           `json:"header,omitempty"`
	MultiSelect bool             `json:"multi_select"`
	Options     []QuestionOption `json:"options"`
}

type QuestionOption struct {
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
}

// Answers maps a question's text to its answer.
type Answers map[string]Answer

// Answer is the answer to one question. On the wire it is a string (one label,
// or the person's own words) or a list of labels; Labels is set for a list,
// Text for a string, so an answer goes back out in the form it came in.
type Answer struct {
	Labels []string // the labels picked, when the answer was a list
	Text   string   // one label or the person's own words
}

// Words is the answer as a list: the labels picked, or the one string.
func (a Answer) Words() []string {
	if a.Labels != nil {
		return a.Labels
	}
	return []string{a.Text}
}

// String is the answer as a person reads it: the text, or the list as JSON.
func (a Answer) String() string {
	if a.Labels == nil {
		return a.Text
	}
	b, _ := json.Marshal(a.Labels)
	return string(b)
}

func (a Answer) MarshalJSON() ([]byte, error) {
	if a.Labels != nil {
		return json.Marshal(a.Labels)
	}
	return json.Marshal(a.Text)
}

// UnmarshalJSON accepts only what the protocol allows; the error names the
// question, so a client's developer knows which answer was wrong.
func (as *Answers) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if raw == nil {
		*as = nil
		return nil
	}
	out := make(Answers, len(raw))
	for q, v := range raw {
		var a Answer
		switch {
		case json.Unmarshal(v, &a.Text) == nil && len(v) > 0 && v[0] == '"':
		case len(v) > 0 && v[0] == '[':
			var list []any
			if err := json.Unmarshal(v, &list); err != nil {
				return err
			}
			a.Labels = make([]string, 0, len(list))
			for _, e := range list {
				s, ok := e.(string)
				if !ok {
					return fmt.Errorf("answer to %q: a list must hold labels (strings)", clip(q, 64))
				}
				a.Labels = append(a.Labels, s)
			}
		default:
			return fmt.Errorf("answer to %q must be a label, a list of labels, or your own words", clip(q, 64))
		}
		out[q] = a
	}
	*as = out
	return nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

type QuestionResolved struct {
	RequestID string    `json:"request_id"`
	Answers   Answers   `json:"answers,omitempty"`
	Response  string    `json:"response,omitempty"`
	Cancelled bool      `json:"cancelled,omitempty"`
	By        *RouteKey `json:"by,omitempty"`
}

type Mode struct {
	Current   string       `json:"current"`
	Available []ModeOption `json:"available,omitempty"`
	// ConfigOptions are the session's other settings (model, effort, …).
	ConfigOptions []ConfigOption `json:"config_options,omitempty"`
}

type ModeOption struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

type ConfigOption struct {
	ID      string       `json:"id"`
	Name    string       `json:"name"`
	Current string       `json:"current"`
	Values  []ModeOption `json:"values,omitempty"`
}

// Commands lists the agent's slash commands, for completion.
type Commands struct {
	Commands []Command `json:"commands"`
}

type Command struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Hint        string `json:"hint,omitempty"`
}

type Usage struct {
	InputTokens  int64   `json:"input_tokens,omitempty"`
	OutputTokens int64   `json:"output_tokens,omitempty"`
	CostUSD      float64 `json:"cost_usd,omitempty"`
}

type TurnStatus struct {
	Active    bool   `json:"active"`
	MessageID string `json:"message_id,omitempty"`
}

type PromptDone struct {
	StopReason string  `json:"stop_reason"`
	MessageID  string  `json:"message_id,omitempty"` // the person's
	CostUSD    float64 `json:"cost_usd,omitempty"`
}

// Error codes of error events.
const (
	CodeBadInput   = "bad_input"
	CodeTooLarge   = "too_large"
	CodeRateLimit  = "rate_limited"
	CodeBusy       = "busy"
	CodeNotFound   = "not_found"
	CodeCardClosed = "card_closed"
	CodeForbidden  = "forbidden"
	CodeAgent      = "agent_error"
	CodeInternal   = "internal"
	CodeRestart    = "restarted"
	CodeNoHistory  = "history_lost"
)

type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Ref     string `json:"ref,omitempty"` // the input it answers (a message id or request id)
}

// SessionInfo records that a thread's session started or ended.
type SessionInfo struct {
	State     string `json:"state"` // started, resumed, unloaded, exited
	SessionID string `json:"session_id,omitempty"`
	Detail    string `json:"detail,omitempty"`
}

// Connection-level payloads.

type Config struct {
	Chat         string      `json:"chat"`
	Channel      string      `json:"channel"`
	Agents       []AgentInfo `json:"agents"`
	DefaultAgent string      `json:"default_agent"`
	Version      string      `json:"version"`
}

type AgentInfo struct {
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	Transport string   `json:"transport"`
	Status    string   `json:"status"`
	Roots     []string `json:"roots,omitempty"`
}

type ThreadEvent struct {
	Thread Thread `json:"thread"`
}

type ReplayDone struct {
	LastSeq int64 `json:"last_seq"`
}

// HistoryPruned says the thread's events up to ThroughSeq are no longer
// stored: a replay after an older seq goes on from ThroughSeq+1.
type HistoryPruned struct {
	ThroughSeq int64 `json:"through_seq"`
}

type Pong struct{}

func (UserMessage) EventType() string        { return TypeUserMessage }
func (Delivery) EventType() string           { return TypeDelivery }
func (AgentChunk) EventType() string         { return TypeAgentChunk }
func (ThoughtChunk) EventType() string       { return TypeThoughtChunk }
func (ToolCall) EventType() string           { return TypeToolCall }
func (ToolCallUpdate) EventType() string     { return TypeToolCallUpdate }
func (Plan) EventType() string               { return TypePlan }
func (PermissionRequest) EventType() string  { return TypePermissionRequest }
func (PermissionResolved) EventType() string { return TypePermissionResolved }
func (Question) EventType() string           { return TypeQuestion }
func (QuestionResolved) EventType() string   { return TypeQuestionResolved }
func (Mode) EventType() string               { return TypeMode }
func (Commands) EventType() string           { return TypeCommands }
func (Usage) EventType() string              { return TypeUsage }
func (TurnStatus) EventType() string         { return TypeTurnStatus }
func (PromptDone) EventType() string         { return TypePromptDone }
func (Error) EventType() string              { return TypeError }
func (SessionInfo) EventType() string        { return TypeSessionInfo }
func (Config) EventType() string             { return TypeConfig }
func (ThreadEvent) EventType() string        { return TypeThread }
func (ReplayDone) EventType() string         { return TypeReplayDone }
func (Pong) EventType() string               { return TypePong }
func (HistoryPruned) EventType() string      { return TypeHistoryPruned }
