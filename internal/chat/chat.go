// Package chat is parley's model: threads, routes, events, cards and inputs, with
// the event payloads every channel shows and every driver reports. It does no I/O.
package chat

import (
	"encoding/json"
	"errors"
	"strconv"
	"time"
)

// ThreadID names one conversation with one agent in one working directory.
type ThreadID string

// RouteKey is a place people talk from: a browser chat, a TUI, an IM chat.
type RouteKey struct {
	Channel string `json:"channel"` // the channel: web, tui, rest, acp, telegram, irc, xmpp, …
	Chat    string `json:"chat"`    // the channel's own chat (a tab, a terminal, an IM conversation)
}

// String is the key as "channel:chat", as logs and metrics show it.
func (k RouteKey) String() string { return k.Channel + ":" + k.Chat }

// Thread states, as the dashboard shows them.
const (
	ThreadIdle     = "idle"     // a session is live and no turn runs
	ThreadWorking  = "working"  // a turn is in flight
	ThreadUnloaded = "unloaded" // no live session; the next message resumes it
	ThreadCrashed  = "crashed"  // the session died; the next message resumes it
	ThreadNoAgent  = "no_agent" // its agent is no longer configured: nothing crashed
	// ThreadHandedBack: its session was handed to a terminal; the next
	// message continues it here, unless it runs there still.
	ThreadHandedBack = "handed_back"
)

// Thread is one persisted conversation. Its lane goroutine is its only writer.
type Thread struct {
	ID        ThreadID  `json:"id"`             // made by parley at creation; never changes
	Agent     string    `json:"agent"`          // the configured agent's id
	Cwd       string    `json:"cwd"`            // the agent's working directory, inside one of its roots
	SessionID string    `json:"session_id"`     // the agent's native session id, for resume
	Title     string    `json:"title"`          // the first line of the first message, cut near 80 characters, or the person's own (rename)
	State     string    `json:"state"`          // one of the Thread* states
	Mode      string    `json:"mode,omitempty"` // the session mode in force (or chosen for the next start)
	CreatedAt time.Time `json:"created_at"`     // when the thread was made
	UpdatedAt time.Time `json:"updated_at"`     // the time of its newest change
	// Model is the model the agent last said was in force (its list's
	// value), asked for again when the session restarts; "" until it says.
	Model string `json:"model,omitempty"`
	// LastSeq is the seq of the newest event in the thread's log.
	LastSeq int64 `json:"last_seq"`
	// Archived hides the thread from the default list; it stays readable,
	// and a message sent to it un-archives it.
	Archived bool `json:"archived,omitempty"`
	// GitBase is the commit HEAD named in the thread's repository when it
	// started: its change is counted from it ("" outside git, or made before
	// parley recorded it). Set once, at the start.
	GitBase string `json:"git_base,omitempty"`
	// Worktree is the git worktree parley made for the thread (its cwd is in
	// it), "" when it runs in a checkout of the person's. Set once.
	Worktree string `json:"worktree,omitempty"`
	// Node is the machine that owns the thread, on a cluster's hub ("" for
	// this machine's own); never stored.
	Node string `json:"node,omitempty"`
	// Copy is set at a cluster's hub when its machine is away and what the
	// hub shows of the thread is the hub's own copy (never stored; a
	// follower says so in replay_done).
	Copy *HubCopy `json:"-"`
	// TurnMessageID is the person's message whose turn is in flight, or "".
	// A non-empty value found at start-up means the daemon died mid-turn.
	TurnMessageID string `json:"-"`
}

// HubCopy says a thread is read from the hub's copy of its events, its
// machine away since OfflineSince (the hub's clock: its last heartbeat).
type HubCopy struct {
	OfflineSince time.Time
}

// LiveSession is an agent process parley runs for a thread, as the
// dashboard's live agents list shows it.
type LiveSession struct {
	Thread ThreadID  `json:"thread"`
	Agent  string    `json:"agent"`
	Cwd    string    `json:"cwd"`
	PID    int       `json:"pid,omitempty"` // 0: the driver runs none of its own (tmux adopt) or does not say
	Busy   bool      `json:"busy"`          // a turn runs, or it is starting
	Since  time.Time `json:"since"`
	// RSSBytes is the memory of its process and their children (/proc), 0 when unknown.
	RSSBytes int64 `json:"rss_bytes,omitempty"`
}

// Route is a route and the thread it is attached to now.
type Route struct {
	Key       RouteKey  `json:"key"`        // the place people talk from
	ThreadID  ThreadID  `json:"thread"`     // the thread the route shows and sends to
	UpdatedAt time.Time `json:"updated_at"` // when it was last attached
}

// Delivery states of an input, in the order they happen.
const (
	DeliveryQueued     = "queued"     // stored, waiting for its turn
	DeliveryDelivering = "delivering" // its turn started: being handed to the agent
	DeliverySubmitted  = "submitted"  // the agent showed it has it
	DeliveryFailed     = "failed"     // it did not reach the agent (detail says why); may be retried
	// DeliveryUnknown: the driver could prove neither that the agent got the
	// message nor that it did not (the send was stopped, or the agent went
	// away, while the message may have been on its way). Never sent again
	// by parley; the detail says why.
	DeliveryUnknown = "unknown"
)

// Input is a message a person sent, kept from acceptance until it is delivered or failed.
type Input struct {
	MessageID  string    `json:"message_id"`       // chosen by the client; a retry reuses it
	ThreadID   ThreadID  `json:"thread"`           // the thread it was sent to
	From       RouteKey  `json:"from"`             // the route it was sent from
	Text       string    `json:"text"`             // the message as the person wrote it
	State      string    `json:"state"`            // one of the Delivery* states
	Detail     string    `json:"detail,omitempty"` // why it waits, failed or is unknown, in words a person can act on
	AcceptedAt time.Time `json:"accepted_at"`      // when parley stored it
}

// Pending reports whether the input still waits for delivery.
func (in Input) Pending() bool {
	return in.State == DeliveryQueued || in.State == DeliveryDelivering
}

// Card kinds and states.
const (
	CardPermission = "permission" // a PermissionRequest
	CardQuestion   = "question"   // a Question

	CardOpen      = "open"      // waiting for an answer
	CardResolved  = "resolved"  // answered
	CardCancelled = "cancelled" // gone unanswered (a stop, withdrawn by the agent)
	CardExpired   = "expired"   // left open when parley stopped; closed at its restart
)

// Card is a permission request or a question, resolved exactly once.
type Card struct {
	ThreadID  ThreadID `json:"thread"`     // the thread it was asked in
	RequestID string   `json:"request_id"` // the agent's (or its driver's) id of the request, unique in the thread
	Kind      string   `json:"kind"`       // CardPermission or CardQuestion
	State     string   `json:"state"`      // CardOpen, CardResolved, CardCancelled or CardExpired
	// Request is the wire payload of the permission_request or question event.
	Request json.RawMessage `json:"request"`
	// Resolution is the payload of the *_resolved event once the card is over.
	Resolution    json.RawMessage `json:"resolution,omitempty"`
	TurnMessageID string          `json:"turn_message_id,omitempty"` // the message whose turn opened it ("" outside a turn)
	CreatedAt     time.Time       `json:"created_at"`                // when it opened
	ResolvedAt    time.Time       `json:"resolved_at,omitempty"`     // zero while open
}

// Event is one entry of a thread's log: a type, a gapless per-thread seq and a payload.
// Connection-level events (config, replay_done, …) have no thread and no seq.
type Event struct {
	Type    string          // one of the Type* constants
	Thread  ThreadID        // "" for a connection-level event
	Seq     int64           // gapless within the thread, from 1; 0 for a connection-level event
	TS      time.Time       // when parley logged it
	Payload json.RawMessage // a JSON object of the type's own fields
	// Restated marks an open card sent again after a replay (on the wire
	// "restated": true): it restates what is open now and is no log entry,
	// so it has no seq. Never stored.
	Restated bool
}

// NewEvent builds an unsequenced event from a payload.
func NewEvent(thread ThreadID, p Payload, ts time.Time) (Event, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return Event{}, err
	}
	return Event{Type: p.EventType(), Thread: thread, TS: ts, Payload: b}, nil
}

// Decode unmarshals the payload into v.
func (e Event) Decode(v any) error { return json.Unmarshal(e.Payload, v) }

// Frame is the event as it goes on the wire: the payload's fields beside
// type, thread, seq and ts. It is built once and shared by every connection.
func (e Event) Frame() []byte {
	b := make([]byte, 0, len(e.Payload)+96)
	b = append(b, `{"type":`...)
	b = strconv.AppendQuote(b, e.Type)
	if e.Thread != "" {
		b = append(b, `,"thread":`...)
		b = strconv.AppendQuote(b, string(e.Thread))
	}
	if e.Seq != 0 {
		b = append(b, `,"seq":`...)
		b = strconv.AppendInt(b, e.Seq, 10)
	}
	if !e.TS.IsZero() {
		b = append(b, `,"ts":"`...)
		b = e.TS.UTC().AppendFormat(b, TimeFormat)
		b = append(b, '"')
	}
	if e.Restated {
		b = append(b, `,"restated":true`...)
	}
	p := e.Payload
	if len(p) > 2 && p[0] == '{' {
		b = append(b, ',')
		b = append(b, p[1:]...)
	} else {
		b = append(b, '}')
	}
	return b
}

// TimeFormat is RFC 3339 with milliseconds, as the protocol promises.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// Sentinel errors, mapped to socket codes and HTTP statuses in the web channel;
// each one's text says what it means.
var (
	ErrNotFound     = errors.New("not found")
	ErrBusy         = errors.New("thread is busy: too many messages waiting")
	ErrCardClosed   = errors.New("card is no longer open")
	ErrNoTurn       = errors.New("no turn is running")
	ErrBadInput     = errors.New("bad input")
	ErrOutsideRoot  = errors.New("working directory is outside the allowed roots")
	ErrUnknownAgent = errors.New("unknown agent")
	ErrClosed       = errors.New("parley is shutting down")
	ErrDuplicate    = errors.New("duplicate message id")
	// ErrAway comes with a message's receipt (queued, "waits for machine
	// …") when its thread's machine is away: accepted, not an error, but a
	// receipt no log event carries yet, so the sender is given it.
	ErrAway         = errors.New("waits for its machine")
	ErrTooLarge     = errors.New("message too large")
	ErrRateLimited  = errors.New("too many requests")
	ErrSessionLimit = errors.New("too many agents running")
	// ErrSessionRunning: an agent's session runs now in a process parley
	// did not start (a terminal): a second process on it would fork it.
	ErrSessionRunning = errors.New("the session is running now")
)

// SearchHit is one place a search matched: a thread's title (Kind "title",
// Seq 0), a person's message ("user", its seq) or an answer ("agent", the
// seq of its first chunk).
type SearchHit struct {
	Thread   ThreadID `json:"thread"`
	Seq      int64    `json:"seq"`
	Kind     string   `json:"kind"`
	Snippet  string   `json:"snippet"` // the matched text around the match, cut with "…"
	Title    string   `json:"title"`   // the thread's title
	Archived bool     `json:"archived,omitempty"`
}
