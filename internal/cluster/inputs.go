package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
)

// Inputs for a node wait in its stream PARLEY_IN_<node> at the hub. The node
// has no JetStream rights at all: the hub's own connection reads the stream
// (consumer "node", one input at a time, in order) and hands each input to
// the node as a request on parley.to.<node>.in. The node answers only after
// its SQLite commit, and the hub acks the input only on that answer; without
// one (node away, link down) the input is redelivered with backoff, and it
// fails with a reason once it has waited longer than HubOptions.InputWait.
//
// Why not let the node pull its own consumer: JetStream delivers a pulled
// message to whatever reply subject the pull names, and NATS checks no reply
// subject against the puller's rights, so a node could have its inputs
// delivered onto another node's subjects.
//
// This file is what both ends read; the hub's end (the stream, the
// forwarder, Request, Ask) is hub_inputs.go, the node's (serveInputs,
// applyOnce) node_inputs.go.

// InputHandler applies one input on the node and returns once it is
// committed (or was already: an input may come again when the hub did not
// get the answer), with a result for the sender (may be nil). A *Refusal
// means the input can never be applied; any other error is retried.
type InputHandler func(ctx context.Context, id string, data []byte) ([]byte, error)

// Refusal is a node's permanent no to an input, with the reason the sender
// is told; Err, when set, is the chat error it is (chat.ErrCardClosed…),
// which the sender at the hub gets back as such.
type Refusal struct {
	Reason string
	Err    error
}

func (r *Refusal) Error() string { return r.Reason }
func (r *Refusal) Unwrap() error { return r.Err }

// Refuse makes err a refusal, keeping the chat error it wraps.
func Refuse(err error) *Refusal {
	r := &Refusal{Reason: err.Error()}
	for _, e := range chatErrors {
		if errors.Is(err, e) {
			r.Err = e
			break
		}
	}
	return r
}

// chatErrors are the chat errors a refusal carries across by name: its code
// is the place in this list, so a new one goes at the end (a hub and its
// nodes run one version, but a queued refusal may outlive an upgrade).
var chatErrors = []error{chat.ErrNotFound, chat.ErrBusy, chat.ErrCardClosed, chat.ErrNoTurn, chat.ErrBadInput,
	chat.ErrOutsideRoot, chat.ErrUnknownAgent, chat.ErrClosed, chat.ErrDuplicate, chat.ErrTooLarge,
	chat.ErrRateLimited, chat.ErrSessionLimit,
	// A card answer refused because the card's agent is not running: the
	// card stays open (agent_error), unlike ErrCardClosed.
	driver.ErrNotRunning,
	// What an agent does not do (a terminal of an agent that runs in none).
	driver.ErrUnsupported}

func chatErrorCode(err error) int {
	for i, e := range chatErrors {
		if errors.Is(err, e) {
			return i + 1
		}
	}
	return 0
}

// Limits of the input path.
const (
	// DefaultInputWait is how long an input waits for its node before it fails.
	DefaultInputWait = 24 * time.Hour
	// inputTimeout bounds one hand-over: the node answers after its commit.
	inputTimeout = 20 * time.Second
	// inputAckWait is the consumer's AckWait: longer than a hand-over, so
	// JetStream never redelivers an input the hub still holds.
	inputAckWait = 2 * time.Minute
	// inputBackoffMax caps the wait between two tries for an absent node.
	inputBackoffMax = 5 * time.Second
)

// inputAnswer is the node's answer to an input.
type inputAnswer struct {
	Result  json.RawMessage `json:"result,omitempty"`
	Error   string          `json:"error,omitempty"`
	Refused bool            `json:"refused,omitempty"`
	Code    int             `json:"code,omitempty"` // the chat error refused with (chatErrors, from 1)
	// Again: the node had applied it before; Result is its first answer.
	Again bool `json:"again,omitempty"`
}

// withinHeader carries an asked input's time budget (a Go duration): the
// node applies nothing after it. A duration, not a deadline: the machines'
// clocks may differ.
const withinHeader = "Parley-Within"

// NATS carries at most maxPayload a message (the hub's server's limit).
const maxPayload = 8 << 20

// MaxInput is the most an input for a node may weigh as sent: a message's
// JSON with its files as base64 (4/3 of their size), under NATS's
// maxPayload with room for the headers. limits.max_message_bytes may allow
// more (up to 16 MiB): such a message is refused here with ErrTooLarge and
// a reason, not by NATS after the checks said fine.
const MaxInput = maxPayload - 64<<10
