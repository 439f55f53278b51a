// Package driver is the contract between a thread's lane and the agent behind it.
// The stream, acp and tmux transports implement it; the router never knows which
// one serves a thread.
//
// The life of a turn, as the lane sees it:
//
//	Start (or resume) → Session
//	Session.Prompt     returns once the text is handed to the agent, or could
//	                   not be (error → "failed", with the error's words)
//	Sink.Received()    the agent's first evidence that it has the text
//	                   (→ "submitted"; a DeliveryProver's Prompt is that evidence)
//	Sink.Event(...)    streamed updates: chunks, tool calls, cards, mode, …
//	Sink.TurnEnded(r)  the turn is over, with its stop reason
//
// Cancel, AnswerPermission and AnswerQuestion may be called at any time, from
// another goroutine than Prompt's: stop and card answers never wait behind a turn.
package driver

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/parleyhq/parley/internal/chat"
)

// Driver starts sessions of one transport.
type Driver interface {
	// Start starts a session for spec, or resumes spec.ResumeID when it is set.
	// Updates are reported to sink until the session is closed or exits.
	Start(ctx context.Context, spec Spec, sink Sink) (Session, error)
}

// Spec says what to start.
type Spec struct {
	ThreadID chat.ThreadID
	AgentID  string
	Command  string   // program path or name found on PATH
	Args     []string // extra arguments from config
	Env      []string // KEY=VALUE pairs added to parley's own environment
	Cwd      string   // the thread's working directory (already confined to a root)
	ResumeID string   // the agent's native session id to resume, or ""
	Mode     string   // the session mode to start in, or ""
	Model    string   // the model to ask for, or ""
	// Options carries transport-specific settings from config (e.g. the tmux session to adopt).
	Options map[string]string
	// Logger is the session's log, already naming its thread and agent (the
	// router's lane gives its own): a driver adds only what is its own. Nil:
	// the driver's logger, with the thread and agent added.
	Logger *slog.Logger
	// Tools is parley's own MCP server for this session (internal/mcpserver:
	// ask_person, notify_person), or nil. Each driver hands it to its agent
	// in the agent's own way and lets its tools run without asking.
	Tools *MCPServer
}

// MCPServer is an MCP server reached over streamable HTTP. Headers carry
// the session's credential: never logged, never on a command line.
type MCPServer struct {
	Name    string            // the name the agent knows it by ("parley")
	URL     string            // http://127.0.0.1:port/mcp
	Headers map[string]string // e.g. Authorization: Bearer <secret>
}

// ClaudeToolTimeout is the per-server bound on one tool call that Claude
// Code's --mcp-config is given for parley's server: the longest it takes
// (2^31-1 ms, about 24.8 days; its own default, or the person's
// MCP_TOOL_TIMEOUT, may be far shorter), as an ask waits for the person.
const ClaudeToolTimeout = 1<<31 - 1

// ClaudeConfig is the server as Claude Code's --mcp-config file holds it.
func (m MCPServer) ClaudeConfig() ([]byte, error) {
	type server struct {
		Type    string            `json:"type"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers,omitempty"`
		Timeout int64             `json:"timeout"` // ms
	}
	return json.Marshal(map[string]map[string]server{
		"mcpServers": {m.Name: {Type: "http", URL: m.URL, Headers: m.Headers, Timeout: ClaudeToolTimeout}},
	})
}

// DeliveryProver is a Session whose Prompt alone proves delivery, because it
// reads the agent's screen (tmux). For other drivers Prompt returning nil only
// says the text was handed over (written to a pipe the agent may never read):
// the agent's own evidence, reported with Sink.Received, proves it has it.
// For a DeliveryProver, output may be a menu left open or a turn the person
// typed in the pane, so the receipt stays "delivering" until Prompt returns.
type DeliveryProver interface {
	ProvesDelivery()
}

// DeliveryChecker is a Driver that can read, in the agent's own record of a
// session (Claude Code's transcript), whether a message reached it. A crash
// of parley leaves a message "delivering": the agent may have read it, asked
// its model and kept it, or never seen it. At the next start the lane asks
// (off its goroutine, with a deadline) and says "submitted" for Delivered,
// "failed" only for NotDelivered (the record proves it never got there), and
// "unknown" otherwise; a driver that keeps no such record is not one.
type DeliveryChecker interface {
	// CheckDelivery answers for m, sent to the session spec.ResumeID (the
	// thread's stored session id, "" when none was known) in spec.Cwd. why
	// says, in words a person can act on, what the record showed.
	CheckDelivery(ctx context.Context, spec Spec, m Sent) (v Verdict, why string)
}

// Sent is a message parley was delivering when it stopped.
type Sent struct {
	MessageID string
	Text      string
	// At is when it went on its way to the agent (its "delivering"
	// receipt): no record older than this is of it.
	At time.Time
}

// Verdict is a DeliveryChecker's answer.
type Verdict int

const (
	// VerdictUnknown: the record does not say (not kept yet, or no record).
	VerdictUnknown Verdict = iota
	// Delivered: the session's record holds the message.
	Delivered
	// NotDelivered: the record proves the agent never got the message.
	NotDelivered
)

// Session is one live agent process (or pane) serving a thread.
type Session interface {
	// Prompt hands the person's text to the agent. It returns nil once the text
	// is handed over (a DeliveryProver: once the agent has it), or an error whose
	// text says, in words a person can act on, why it could not. The agent's
	// first evidence that it has the text comes through Sink.Received, the
	// turn's end later through Sink.TurnEnded. Cancelling ctx abandons a
	// delivery that has not happened yet.
	Prompt(ctx context.Context, p Prompt) error
	// Cancel stops the turn in flight at once. The driver ends the turn with
	// TurnEnded(chat.StopCancelled) and lets go of its open requests; their
	// cards are the lane's, which closes them with the stop.
	Cancel(ctx context.Context) error
	// AnswerPermission answers an open permission_request card. The card's
	// state is the lane's: the driver translates the answer for its agent. An
	// answer it refuses leaves the agent's request waiting, for the lane's
	// dismissal (Cancelled) that follows.
	AnswerPermission(ctx context.Context, requestID string, a PermissionAnswer) error
	// AnswerQuestion answers an open question card (likewise).
	AnswerQuestion(ctx context.Context, requestID string, a QuestionAnswer) error
	// SetMode changes the session mode; the driver reports the new mode as a chat.Mode event.
	SetMode(ctx context.Context, modeID string) error
	// SetConfigOption changes one config option (model, effort, …).
	SetConfigOption(ctx context.Context, id, value string) error
	// Close ends the session (the process, not the thread). It is safe to call twice.
	Close(ctx context.Context) error
}

// Processor is a Session that runs a process of its own: its pid, for the
// live agents list (memory from /proc).
type Processor interface {
	PID() int
}

// Prompt is one message for the agent.
type Prompt struct {
	MessageID string
	Text      string
	Images    []Image
	// FileImages are attached image files, already saved in the working
	// directory and named by path in Text: a driver whose agent takes
	// images passes them as images too; one that does not leaves them out
	// (the agent reads the files).
	FileImages []Image
}

// Image is an attachment in a prompt.
type Image struct {
	MIMEType string
	Data     []byte
}

// PermissionAnswer is the option chosen on a permission card.
type PermissionAnswer struct {
	OptionID  string
	Message   string // the person's reason, for a reject (ErrNoWords: the agent takes none)
	Cancelled bool   // dismissed without choosing: the driver denies the tool
}

// QuestionAnswer answers a question card.
type QuestionAnswer struct {
	Answers  chat.Answers
	Response string // an optional free reply that answers no specific question
	// Cancelled dismisses the question without an answer: the lane sends it
	// when the driver refused an answer, so the agent does not wait for one
	// the thread shows as given.
	Cancelled bool
}

// Sink receives a session's updates. Its methods never block for long and are
// safe to call from any goroutine; the lane serializes them.
type Sink interface {
	// Event reports something the person sees: an agent_chunk, tool_call,
	// permission_request, question, mode, plan, usage, commands or error payload.
	Event(p chat.Payload)
	// Received reports the agent's first evidence that it has the prompt in
	// flight: something it says only after it took the text (Claude Code's
	// first line of the turn after the model was asked, an ACP agent's first
	// session/update for the prompt or its answer). It may come before Prompt
	// returns; later calls for the same turn are ignored.
	Received()
	// SessionID reports the agent's native session id, once known (for resume).
	SessionID(id string)
	// TurnEnded ends the turn in flight with a stop reason (chat.Stop*).
	TurnEnded(stopReason string)
	// CardWithdrawn says the agent itself no longer waits for the card with
	// this id. A card is the lane's: it closes a turn's cards when the turn
	// ends or stops and every card when the session exits, so a driver reports
	// only a withdrawal the agent made.
	CardWithdrawn(requestID string)
	// Waiting says the message Prompt is delivering cannot go to the agent
	// yet, and why, in words a person can act on ("the agent is working on a
	// turn"). The lane, which owns every receipt, shows it as the message's
	// queued receipt; a driver never reports a delivery state itself.
	Waiting(messageID, reason string)
	// Exited says the session ended by itself; err says why (nil: a clean exit).
	Exited(err error)
}

// SessionLister is implemented by drivers that can list an agent's own sessions.
type SessionLister interface {
	ListSessions(ctx context.Context, spec Spec) ([]NativeSession, error)
}

// NativeSession is a session the agent itself keeps (e.g. a Claude transcript).
type NativeSession struct {
	ID        string    `json:"session_id"`
	Cwd       string    `json:"cwd"`
	Title     string    `json:"title"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Errors a driver may return; wrap them with detail for the person.
var (
	ErrNotRunning  = errors.New("the agent is not running")
	ErrUnknownCard = errors.New("the agent is not waiting for that card")
	// ErrNoWords: the agent takes no words with this answer (a rejection's
	// reason): nothing of the answer was given. The router gives the answer
	// without them and sends the words as the person's next message.
	ErrNoWords     = errors.New("the agent takes no words with this answer")
	ErrUnsupported = errors.New("the agent does not support that")
	ErrHistoryLost = errors.New("the agent could not restore the session's history")
	// ErrUnverified: Prompt ended (stopped, or the agent went away) after the
	// text may have reached the agent and before either was proven. The lane
	// says so (delivery "unknown"), never "failed".
	ErrUnverified = errors.New("it is not known whether the message reached the agent")
)
