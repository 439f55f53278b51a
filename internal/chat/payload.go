package chat

import (
	"encoding/json"
	"fmt"
	"time"
)

// Payload is the type-specific part of an event; docs/protocol.md lists them all.
type Payload interface{ EventType() string }

// Event types written to a thread's log.
const (
	TypeUserMessage        = "user_message"        // a person's message (UserMessage)
	TypeDelivery           = "delivery"            // a message's receipt (Delivery)
	TypeAgentChunk         = "agent_chunk"         // answer text (AgentChunk)
	TypeThoughtChunk       = "thought_chunk"       // reasoning text (ThoughtChunk)
	TypeToolCall           = "tool_call"           // a tool the agent runs (ToolCall)
	TypeToolCallUpdate     = "tool_call_update"    // its progress (ToolCallUpdate)
	TypePlan               = "plan"                // the agent's task list (Plan)
	TypePermissionRequest  = "permission_request"  // a permission card (PermissionRequest)
	TypePermissionResolved = "permission_resolved" // its answer (PermissionResolved)
	TypeQuestion           = "question"            // a question card (Question)
	TypeQuestionResolved   = "question_resolved"   // its answer (QuestionResolved)
	TypeMode               = "mode"                // the session's mode and settings (Mode)
	TypeCommands           = "commands"            // the agent's slash commands (Commands)
	TypeUsage              = "usage"               // a turn's cost (Usage)
	TypeTurnStatus         = "turn_status"         // a turn runs or not (TurnStatus)
	TypePromptDone         = "prompt_done"         // a turn ended (PromptDone)
	TypeError              = "error"               // an error a person sees (Error)
	TypeSessionInfo        = "session"             // the agent process came or went (SessionInfo)
	TypeThreadInfo         = "thread_info"         // the thread was renamed, archived or un-archived (ThreadInfo)
	TypeNotice             = "notice"              // a note for the person from the agent or a script (Notice)
)

// Connection-level event types (not in any log).
const (
	TypeConfig     = "config"      // a connection's first frame (Config)
	TypeThread     = "thread"      // the thread shown (ThreadEvent)
	TypeReplayDone = "replay_done" // the replay is over (ReplayDone)
	// TypeHistoryPruned says the replay skips events that limits.retain_events
	// removed (docs/protocol.md, "Retention").
	TypeHistoryPruned = "history_pruned"
	TypePong          = "pong" // answers a ping (Pong)
	TypeDone          = "done" // a thread's edit took effect (Done)
	// TypeAgentDraft is provisional answer text (AgentDraft): live only,
	// never in any log, replaced by the agent's final words.
	TypeAgentDraft = "agent_draft"
)

// Stop reasons of prompt_done.
const (
	StopEndTurn   = "end_turn"   // the agent finished
	StopCancelled = "cancelled"  // stopped by a person
	StopMaxTokens = "max_tokens" // the model's output limit
	StopRefusal   = "refusal"    // the model declined
	StopError     = "error"      // the turn broke (an Error says why)
)

// UserMessage is a message a person sent, as stored: its client-chosen id
// (retries reuse it) and the route it came from.
type UserMessage struct {
	MessageID string   `json:"message_id"` // chosen by the client; a retry reuses it
	Text      string   `json:"text"`       // as the person wrote it
	From      RouteKey `json:"from"`       // the route it was sent from
	// Files are the files attached to it, saved in the thread's working
	// directory; Text names their paths too (what the agent got).
	Files []FileRef `json:"files,omitempty"`
	// Imported marks a message from before parley: a turn of the agent's
	// own session, read from its transcript when the session was continued
	// here (MessageID is then the transcript's record id).
	Imported bool `json:"imported,omitempty"`
	// Origin, when set, says no person typed it: a schedule or a trigger
	// sent it (every surface shows which).
	Origin *Origin `json:"origin,omitempty"`
}

// Origin kinds: what sent a message no person typed.
const (
	OriginSchedule = "schedule"
	OriginTrigger  = "trigger"
)

// Origin names the schedule or trigger a message came from.
type Origin struct {
	Kind string `json:"kind"`           // OriginSchedule or OriginTrigger
	ID   string `json:"id"`             // the schedule's or trigger's id
	Name string `json:"name,omitempty"` // its name, when it has one
}

// FileRef is a file attached to a message, as saved in the thread's working
// directory.
type FileRef struct {
	Name     string `json:"name"`                // the saved file's name
	Path     string `json:"path"`                // relative to the thread's working directory, with "/"
	MIMEType string `json:"mime_type,omitempty"` // as the client said
	Size     int64  `json:"size"`
}

// Delivery is a receipt for one message: queued, delivering, submitted,
// failed or unknown (DeliveryQueued…), with words a person can act on in
// Detail when it failed or is unknown.
type Delivery struct {
	MessageID string `json:"message_id"`       // the message the receipt is for
	State     string `json:"state"`            // one of the Delivery* states
	Detail    string `json:"detail,omitempty"` // why it waits, failed or is unknown
}

// AgentChunk is a piece of the agent's answer text, streamed in order.
type AgentChunk struct {
	Text      string `json:"text"`                 // appended to what came before
	MessageID string `json:"message_id,omitempty"` // the agent's message id
	// Imported marks an answer from before parley, as UserMessage.Imported.
	Imported bool `json:"imported,omitempty"`
}

// AgentDraft is provisional answer text: what a terminal agent has drawn so
// far of the answer whose final words (agent_chunk, from its transcript) have
// not come yet. It is never stored and has no seq. Each one replaces the last
// one whole, or, on a connection that asked for appends, adds to it (Extends);
// an agent_chunk, tool_call or prompt_done after it ends it, and a client that
// has seen a later event than AfterSeq ignores it.
type AgentDraft struct {
	// Text is the whole provisional text now ("" clears it), or, with
	// Extends, what follows the text of the draft Extends.
	Text string `json:"text"`
	// AfterSeq is the seq of the thread's last event when it was drawn: it
	// belongs right after that event and nowhere else.
	AfterSeq int64 `json:"after_seq"`
	// ID names the draft (parley's; a driver leaves it 0), so that the next
	// one may extend it.
	ID int64 `json:"id,omitempty"`
	// Extends is the ID of the draft this one only adds Text to (sent only
	// to connections that asked for appends: drafts=append).
	Extends int64 `json:"extends,omitempty"`
}

// Onto is the draft a client shows after this one (its ID and text), given
// the one it shows: this one, or, for an append, the text shown with this
// one's added. An append to a draft the client does not show (it missed one)
// gives none (0, ""): nothing rather than a guess, until the next whole one.
func (d AgentDraft) Onto(shownID int64, shown string) (int64, string) {
	switch {
	case d.Extends == 0:
		return d.ID, d.Text
	case d.Extends == shownID && shownID != 0:
		return d.ID, shown + d.Text
	}
	return 0, ""
}

// ThoughtChunk is a piece of the agent's visible reasoning.
type ThoughtChunk struct {
	Text string `json:"text"` // appended to what came before
}

// ToolCall is a tool the agent runs, shown as a card. Kinds follow ACP: read,
// edit, delete, move, search, execute, think, fetch, other.
type ToolCall struct {
	ToolCallID string          `json:"tool_call_id"`        // the agent's id, which ToolCallUpdate names
	Title      string          `json:"title"`               // what the tool does, as the agent says it ("Run ls")
	Kind       string          `json:"kind"`                // read, edit, delete, move, search, execute, think, fetch or other
	Status     string          `json:"status"`              // pending, in_progress, completed, failed
	Input      json.RawMessage `json:"input,omitempty"`     // the tool's raw input, as the agent sent it
	Locations  []Location      `json:"locations,omitempty"` // the files it touches
	// Imported marks a tool call from before parley, as UserMessage.Imported:
	// it ran then, and its status is its end.
	Imported bool `json:"imported,omitempty"`
}

// Location is a file (and line) a tool call touches.
type Location struct {
	Path string `json:"path"`           // absolute, as the agent gave it
	Line int    `json:"line,omitempty"` // 0: the whole file
}

// ToolCallUpdate changes a tool call shown before (by ToolCallID): its
// status, title, output, diffs or locations; empty fields keep what was there.
type ToolCallUpdate struct {
	ToolCallID string     `json:"tool_call_id"`        // the ToolCall it changes
	Status     string     `json:"status,omitempty"`    // pending, in_progress, completed or failed
	Title      string     `json:"title,omitempty"`     // a better title, when the agent has one
	Output     string     `json:"output,omitempty"`    // the tool's output as text
	Diffs      []Diff     `json:"diffs,omitempty"`     // an edit's changes, file by file
	Locations  []Location `json:"locations,omitempty"` // the files it touches, replacing those shown
	Imported   bool       `json:"imported,omitempty"`  // as ToolCall.Imported
}

// Diff is one file's change by an edit tool: OldText empty for a new file,
// unless Exists says the file is there (empty, or its content not shown).
type Diff struct {
	Path    string `json:"path"`               // the file changed
	OldText string `json:"old_text,omitempty"` // the text replaced ("" for a new file)
	NewText string `json:"new_text"`           // the text put in its place
	// Exists says the file is there now and the change replaces it (a Write
	// card); Unshown, why its current content is not in OldText.
	Exists  bool   `json:"exists,omitempty"`
	Unshown string `json:"unshown,omitempty"`
}

// Plan is the agent's current task list, sent whole each time it changes.
type Plan struct {
	Entries []PlanEntry `json:"entries"` // in the agent's order
}

// PlanEntry is one task of a Plan; Status is pending, in_progress or completed.
type PlanEntry struct {
	Content  string `json:"content"`            // the task, in the agent's words
	Priority string `json:"priority,omitempty"` // high, medium or low, when the agent says
	Status   string `json:"status"`             // pending, in_progress or completed
}

// Permission option kinds.
const (
	OptionAllowOnce    = "allow_once"    // run it this time
	OptionAllowAlways  = "allow_always"  // run it and such calls from now on
	OptionRejectOnce   = "reject_once"   // not this time
	OptionRejectAlways = "reject_always" // never such calls
)

// PermissionRequest is a permission card: the agent asks to run a tool and
// waits for one of Options (answered by RequestID).
type PermissionRequest struct {
	RequestID string             `json:"request_id"` // what a permission_response names
	Tool      PermissionTool     `json:"tool"`       // the tool it asks to run
	Options   []PermissionOption `json:"options"`    // in the order the agent offers them
	// Diffs is what the call will change, when parley could read it as the
	// card opened: a Write over an existing file, from its current content
	// to the new (absent for a new file, whose content the input holds).
	Diffs []Diff `json:"diffs,omitempty"`
	// Elsewhere, when set, says where the card is answered instead of
	// here: "terminal" for a watched session's, which parley cannot answer
	// (Options is then empty). It closes with a PermissionResolved without
	// an option, its Reason saying it was answered there.
	Elsewhere string `json:"elsewhere,omitempty"`
}

// ElsewhereTerminal is PermissionRequest.Elsewhere for a card a person
// answers in the terminal a watched session runs in.
const ElsewhereTerminal = "terminal"

// PermissionTool is the tool a PermissionRequest asks about.
type PermissionTool struct {
	Name       string          `json:"name"`                   // the tool's name (Bash, Edit, …)
	Title      string          `json:"title"`                  // what the call would do, for a person
	Input      json.RawMessage `json:"input,omitempty"`        // the call's raw input
	ToolCallID string          `json:"tool_call_id,omitempty"` // the ToolCall it is about, when shown as one
}

// PermissionOption is one answer to a permission card; Kind is one of the
// Option* constants.
type PermissionOption struct {
	ID    string `json:"id"`    // what a permission_response names
	Label string `json:"label"` // for people, in the agent's words
	Kind  string `json:"kind"`  // one of the Option* constants
}

// PermissionResolved closes a permission card: the option chosen (with the
// person's words, if any), or Cancelled when the card went away unanswered
// (a stop, the agent withdrew it); By is the route that answered.
type PermissionResolved struct {
	RequestID string    `json:"request_id"`          // the card it closes
	OptionID  string    `json:"option_id,omitempty"` // "" when cancelled
	Message   string    `json:"message,omitempty"`   // the person's reason, with a reject
	Cancelled bool      `json:"cancelled,omitempty"` // it went away unanswered, or was dismissed
	By        *RouteKey `json:"by,omitempty"`        // nil when parley closed it (a stop, an exit)
	Reason    string    `json:"reason,omitempty"`    // why parley cancelled it, e.g. the agent did not take the answer
	// Rule names the person's rule that answered, "rule 2 (allow tool=Bash
	// \"go test *\")"; By is then {channel: "rule", chat: "2"}.
	Rule string `json:"rule,omitempty"`
}

// Question is a question card: the agent asks one or more questions and
// waits for the answers (by RequestID).
type Question struct {
	RequestID string         `json:"request_id"` // what a question_answer names
	Questions []QuestionItem `json:"questions"`  // one or more, answered together
}

// QuestionItem is one question of a card, with its options; MultiSelect
// allows several labels.
type QuestionItem struct {
	Question    string           `json:"question"`         // the text, which Answers is keyed by
	Header      string           `json:"header,omitempty"` // a short label for it, when the agent gives one
	MultiSelect bool             `json:"multi_select"`     // several labels may be picked
	Options     []QuestionOption `json:"options"`          // the labels offered; own words may answer too
}

// QuestionOption is one offered answer to a QuestionItem.
type QuestionOption struct {
	Label       string `json:"label"`                 // what an answer names
	Description string `json:"description,omitempty"` // what picking it means, when the agent says
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

// MarshalJSON writes the answer in the form it came in: a list or a string.
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

// QuestionResolved closes a question card: the answers given (or a free
// Response), or Cancelled when it went away unanswered; By is the route
// that answered.
type QuestionResolved struct {
	RequestID string    `json:"request_id"`          // the card it closes
	Answers   Answers   `json:"answers,omitempty"`   // by question text
	Response  string    `json:"response,omitempty"`  // a free reply that answers no one question
	Cancelled bool      `json:"cancelled,omitempty"` // it went away unanswered
	By        *RouteKey `json:"by,omitempty"`        // nil when parley closed it (a stop, an exit)
	Reason    string    `json:"reason,omitempty"`    // why parley cancelled it, e.g. the agent did not take the answer
}

// Mode is the session's permission mode and the modes and settings it can
// switch to.
type Mode struct {
	Current   string       `json:"current"`             // the mode in force
	Available []ModeOption `json:"available,omitempty"` // the modes it can switch to
	// ConfigOptions are the session's other settings (model, effort, …).
	ConfigOptions []ConfigOption `json:"config_options,omitempty"`
}

// ModelOption is the ConfigOption id of a session's model.
const ModelOption = "model"

// ModelName is the session's model as every surface shows it (the
// dashboard's header, parley chat's status line): the agent's name for the
// value in force, else the value as the agent reports it; "" when the agent
// says nothing of its model. The dashboard's model select
// (ui/src/chat/controls.tsx) shows it by the same rule.
func (m Mode) ModelName() string {
	for _, o := range m.ConfigOptions {
		if o.ID != ModelOption {
			continue
		}
		for _, v := range o.Values {
			if v.ID == o.Current && v.Name != "" {
				return v.Name
			}
		}
		return o.Current
	}
	return ""
}

// Model is the value of the session's model in force (what
// set_config_option names), "" when the agent says nothing of its model.
func (m Mode) Model() string {
	for _, o := range m.ConfigOptions {
		if o.ID == ModelOption {
			return o.Current
		}
	}
	return ""
}

// ModeOption is one mode (or one value of a ConfigOption) a session offers.
type ModeOption struct {
	ID          string `json:"id"`                    // what set_mode (or set_config_option) names
	Name        string `json:"name"`                  // for people
	Description string `json:"description,omitempty"` // what the mode allows, when the agent says
}

// ConfigOption is one of a session's settings (model, effort, …) with its
// current value and the values it takes.
type ConfigOption struct {
	ID      string       `json:"id"`               // what set_config_option names
	Name    string       `json:"name"`             // for people
	Current string       `json:"current"`          // the value in force (a Values ID)
	Values  []ModeOption `json:"values,omitempty"` // empty for a free value
}

// Commands lists the agent's slash commands, for completion.
type Commands struct {
	Commands []Command `json:"commands"` // the agent's whole list, replacing the one before
}

// Command is one of the agent's slash commands; Hint describes its argument.
type Command struct {
	Name        string `json:"name"`                  // without the slash
	Description string `json:"description,omitempty"` // what it does
	Hint        string `json:"hint,omitempty"`        // its argument's description
}

// Usage is what a turn cost: tokens in and out, and money when the agent says.
type Usage struct {
	InputTokens  int64   `json:"input_tokens,omitempty"`  // tokens the model read
	OutputTokens int64   `json:"output_tokens,omitempty"` // tokens the model wrote
	CostUSD      float64 `json:"cost_usd,omitempty"`      // in US dollars, when the agent says
	// ContextTokens is how much of the model's context the conversation fills
	// now, of ContextWindow; either is 0 when the agent does not say.
	ContextTokens int64 `json:"context_tokens,omitempty"`
	ContextWindow int64 `json:"context_window,omitempty"` // the model's context, in tokens
}

// UsageTotals sums a thread's usage events (those still in its log).
type UsageTotals struct {
	Turns        int64   `json:"turns"`         // usage events summed
	InputTokens  int64   `json:"input_tokens"`  // tokens the model read, in all
	OutputTokens int64   `json:"output_tokens"` // tokens the model wrote, in all
	CostUSD      float64 `json:"cost_usd"`      // in US dollars, as far as the agent said
	// The newest context fill the agent reported, and its window.
	ContextTokens int64 `json:"context_tokens,omitempty"`
	ContextWindow int64 `json:"context_window,omitempty"` // the model's context, in tokens
}

// TurnStatus says whether a turn is running, and for which message.
type TurnStatus struct {
	Active    bool   `json:"active"`               // a turn runs
	MessageID string `json:"message_id,omitempty"` // the person's message the turn answers
	// Stopping: a stop was asked of the running turn (logged the moment parley
	// takes it); the turn's end (prompt_done, cancelled) follows from the agent,
	// or from parley after limits' stop grace.
	Stopping bool `json:"stopping,omitempty"`
}

// PromptDone ends a turn: StopReason is one of the Stop* constants,
// MessageID the person's message the turn answered.
type PromptDone struct {
	StopReason string  `json:"stop_reason"`          // one of the Stop* constants
	MessageID  string  `json:"message_id,omitempty"` // the person's
	CostUSD    float64 `json:"cost_usd,omitempty"`   // the turn's cost, when the agent says
}

// Error codes of error events.
const (
	CodeBadInput   = "bad_input"    // the input is malformed or invalid
	CodeTooLarge   = "too_large"    // over limits.max_message_bytes
	CodeRateLimit  = "rate_limited" // inputs too fast for the connection's limit
	CodeBusy       = "busy"         // the thread's queue is full: nothing stored
	CodeNotFound   = "not_found"    // no such thread, agent or card
	CodeCardClosed = "card_closed"  // the card was answered or withdrawn already
	CodeForbidden  = "forbidden"    // not allowed for this route or folder
	CodeAgent      = "agent_error"  // the agent failed
	CodeInternal   = "internal"     // parley failed (its log says more)
	CodeRestart    = "restarted"    // parley restarted during the turn or delivery
	CodeNoHistory  = "history_lost" // the session could not be restored: a new one
	CodeRetrying   = "retrying"     // the agent retries a failed model call; the turn goes on
	// CodeSessionRunning: the agent's session runs now in a process parley
	// did not start (a terminal); continuing it here would fork it.
	CodeSessionRunning = "session_running"
)

// Error is an error a person sees: in a thread's log (the agent failed, a
// session lost its history) or answering one input (Ref); Code is one of the
// Code* constants.
type Error struct {
	Code    string `json:"code"`          // one of the Code* constants
	Message string `json:"message"`       // in words a person can act on
	Ref     string `json:"ref,omitempty"` // the input it answers (a message id or request id)
}

// Notice levels: how a notice wants to be read.
const (
	NoticeInfo  = "info"  // for the record
	NoticeDone  = "done"  // a piece of work is finished
	NoticeError = "error" // something went wrong

	FromAgent = "agent" // a notice from the agent's notify_person tool
	FromCLI   = "cli"   // a notice from parley notify (POST /api/notify)
)

// Notice is a note told to the person outside a turn's answer: by the agent
// (its notify_person tool) or by a script (parley notify). It is stored in
// the thread's log, shown on every surface and pushed to the devices that
// turned notices on.
type Notice struct {
	Text  string `json:"text"`  // what to tell, in the sender's words
	Level string `json:"level"` // one of the Notice* levels
	From  string `json:"from"`  // who said it: FromAgent or FromCLI
}

// ValidNoticeLevel reports whether level is one of the Notice* levels.
func ValidNoticeLevel(level string) bool {
	return level == NoticeInfo || level == NoticeDone || level == NoticeError
}

// SessionInfo records that a thread's session started or ended.
type SessionInfo struct {
	State     string `json:"state"`                // starting, started, resumed, identified, unloaded, exited, handed_back
	SessionID string `json:"session_id,omitempty"` // the agent's native session id, once known
	Detail    string `json:"detail,omitempty"`     // why it ended, for exited
	// Command, for handed_back, is what a person types in a terminal to go
	// on with the session there ("cd DIR && claude --resume ID").
	Command string `json:"command,omitempty"`
}

// ThreadInfo says a person renamed the thread, archived or un-archived it:
// what it is now.
type ThreadInfo struct {
	Title    string `json:"title"`
	Archived bool   `json:"archived"`
	// Agent is the thread's agent now; MovedFrom, on a move, the agent it
	// had (gone from the config), and ContextMessages how many of the
	// thread's last messages go to the new agent with the next message.
	Agent           string `json:"agent,omitempty"`
	MovedFrom       string `json:"moved_from,omitempty"`
	ContextMessages int    `json:"context_messages,omitempty"`
}

// Connection-level payloads.

// Config is the first frame of a connection: its route, the agents it can
// start threads with, and the daemon's version.
type Config struct {
	Chat         string      `json:"chat"`          // the connection's route: its chat
	Channel      string      `json:"channel"`       // the connection's route: its channel
	Agents       []AgentInfo `json:"agents"`        // the agents it can start threads with
	DefaultAgent string      `json:"default_agent"` // the agent a new thread gets when none is named
	Version      string      `json:"version"`       // the daemon's version
	// Node is this machine's name at a cluster's hub ("" elsewhere): the
	// node its own agents are listed with.
	Node string `json:"node,omitempty"`
	// Limits are the daemon's limits a client checks before it sends.
	Limits *ConfigLimits `json:"limits,omitempty"`
}

// ConfigLimits are the limits in the config event (docs/protocol.md).
type ConfigLimits struct {
	// MaxMessageBytes is limits.max_message_bytes: a message's text, images
	// and files together, decoded.
	MaxMessageBytes int `json:"max_message_bytes"`
}

// AgentInfo describes one configured agent: its transport, whether it can
// run, and the folders its threads may use.
type AgentInfo struct {
	ID        string   `json:"id"`              // what a new thread names
	Name      string   `json:"name"`            // for people
	Transport string   `json:"transport"`       // stream, acp or tmux
	Status    string   `json:"status"`          // "ready"; "unavailable" when its build has no such transport; "offline" when its machine is
	Roots     []string `json:"roots,omitempty"` // the folders its threads may work in
	// Node is the machine it runs on, at a cluster's hub (which lists every
	// machine's agents); "" elsewhere. A new thread names it (intent.new.node).
	Node string `json:"node,omitempty"`
}

// ThreadEvent tells a connection which thread it shows (on connect and on
// every switch); seq numbers after it belong to that thread.
type ThreadEvent struct {
	Thread Thread `json:"thread"` // the thread as stored now
}

// ReplayDone ends a connection's replay: LastSeq is the newest event sent.
type ReplayDone struct {
	LastSeq int64 `json:"last_seq"` // the newest event sent; live events follow it
	// FromCopy: at a cluster's hub, the thread's machine is away and the
	// replay came from the hub's copy of its recent events (older ones may
	// be missing, said by history_pruned); its own log takes over, with no
	// gap, when it is back. OfflineSince is when the hub last heard from it.
	FromCopy     bool      `json:"from_copy,omitempty"`
	OfflineSince time.Time `json:"offline_since,omitzero"`
}

// HistoryPruned says the thread's events up to ThroughSeq are no longer
// stored: a replay after an older seq goes on from ThroughSeq+1.
type HistoryPruned struct {
	ThroughSeq int64 `json:"through_seq"` // the last seq no longer stored
}

// Pong answers a ping.
type Pong struct{}

// Done answers an edit_thread or delete_thread input that took effect, to
// the connection that sent it; Ref is the input's.
type Done struct {
	Ref  string `json:"ref,omitempty"`
	Note string `json:"note,omitempty"` // what a delete did, in words a person reads
}

// EventType names each payload's event type (Payload), one of the Type*
// constants.
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
func (ThreadInfo) EventType() string         { return TypeThreadInfo }
func (Notice) EventType() string             { return TypeNotice }
func (Config) EventType() string             { return TypeConfig }
func (ThreadEvent) EventType() string        { return TypeThread }
func (ReplayDone) EventType() string         { return TypeReplayDone }
func (Pong) EventType() string               { return TypePong }
func (Done) EventType() string               { return TypeDone }
func (HistoryPruned) EventType() string      { return TypeHistoryPruned }
func (AgentDraft) EventType() string         { return TypeAgentDraft }
