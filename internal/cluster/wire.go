package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/push"
	"github.com/parleyhq/parley/internal/sessions"
)

// What crosses the link about threads, and a join's request: the records
// both ends read (the subjects they go on are in subjects.go).

// Event headers on parley.from.<node>.t.<thread>.ev.
const (
	hdrType = "Parley-Type"
	hdrSeq  = "Parley-Seq"
	hdrTS   = "Parley-TS"
)

// wireThread is a thread as it crosses the link: with its turn, which the
// store's JSON leaves out, and in a summary its open cards, its newest
// finished turn and its newest error (the hub pushes them to its phones).
type wireThread struct {
	chat.Thread
	Turn      string       `json:"turn_message_id,omitempty"`
	Cards     []OpenCard   `json:"open_cards,omitempty"`
	LastTurn  *push.Notice `json:"last_turn,omitempty"`
	LastError *push.Notice `json:"last_error,omitempty"`
	// Notices are its newest notice events (at most maxSummaryNotices,
	// oldest first) with their words: written for the person, they are
	// what the hub's push says.
	Notices []push.Notice `json:"notices,omitempty"`
}

// OpenCard is an open card as a thread summary tells the hub: its id and
// what it asks in a line (chat.Card.Asks), never its input.
type OpenCard struct {
	RequestID string `json:"request_id"`
	Kind      string `json:"kind"`
	Asks      string `json:"asks"`
}

// Title is the card's line in a thread list: what it asks, without the
// "asks …: " lead ("" when the summary names nothing more).
func (c OpenCard) Title() string {
	_, what, _ := strings.Cut(c.Asks, ": ")
	return what
}

func (w wireThread) thread() chat.Thread {
	th := w.Thread
	th.TurnMessageID = w.Turn
	return th
}

// wireEvent is a stored event in a source answer.
type wireEvent struct {
	Type    string          `json:"type"`
	Seq     int64           `json:"seq"`
	TS      time.Time       `json:"ts"`
	Payload json.RawMessage `json:"payload"`
}

// Source request operations.
const (
	opThread = "thread"
	opEvents = "events"
	opTail   = "tail"
	opCards  = "cards"
	opUsage  = "usage"
	opSearch = "search"
	opAsk    = "ask"   // the thread an ask id made here (a hub that restarted before it heard)
	opInput  = "input" // a message's receipt here, by its route and id (a resend at the hub)
)

type srcRequest struct {
	Op     string        `json:"op"`
	Thread chat.ThreadID `json:"thread"`
	Since  int64         `json:"since,omitempty"`
	Limit  int           `json:"limit,omitempty"` // events; tail's n
	State  string        `json:"state,omitempty"` // cards
	Query  string        `json:"query,omitempty"` // search
	Ask    string        `json:"ask,omitempty"`   // ask
	// Route and MessageID name a message (input): the route as this
	// node keeps the hub's, and the message's id there.
	Route     chat.RouteKey `json:"route,omitzero"`
	MessageID string        `json:"message_id,omitempty"`
}

type srcAnswer struct {
	Asked    chat.ThreadID     `json:"asked,omitempty"`    // ask: the thread it made
	Delivery *chat.Delivery    `json:"delivery,omitempty"` // input: its receipt now
	Thread   *wireThread       `json:"thread,omitempty"`
	Events   []wireEvent       `json:"events,omitempty"`
	Cards    []chat.Card       `json:"cards,omitempty"`
	Usage    *chat.UsageTotals `json:"usage,omitempty"`
	Hits     []chat.SearchHit  `json:"hits,omitempty"`
	More     bool              `json:"more,omitempty"` // events: the page was cut (to fit, or at srcMaxLimit); ask again after the last
	NotFound bool              `json:"not_found,omitempty"`
	Error    string            `json:"error,omitempty"`
}

// EventFromMsg rebuilds the event a node published (the hub's side).
func EventFromMsg(m *nats.Msg) (chat.Event, error) {
	// parley.from.<node>.t.<thread>.ev
	parts := strings.Split(m.Subject, ".")
	if len(parts) != 6 || parts[3] != "t" || parts[5] != "ev" {
		return chat.Event{}, errors.New("cluster: not an event subject: " + m.Subject)
	}
	seq, err := strconv.ParseInt(m.Header.Get(hdrSeq), 10, 64)
	if err != nil || seq <= 0 {
		return chat.Event{}, errors.New("cluster: an event without a seq")
	}
	ts, err := time.Parse(time.RFC3339Nano, m.Header.Get(hdrTS))
	if err != nil {
		return chat.Event{}, errors.New("cluster: an event without a time")
	}
	typ := m.Header.Get(hdrType)
	if err := checkEvent(typ, m.Data); err != nil {
		return chat.Event{}, err
	}
	return chat.Event{Type: typ, Thread: chat.ThreadID(parts[4]), Seq: seq, TS: ts, Payload: m.Data}, nil
}

// checkEvent refuses what a node could use to make the hub's frames lie: a
// type that is not a plain name, a payload that is not a JSON object, or one
// naming the frame's own fields (a browser reads the last "thread" of a
// frame, and the payload's come after the hub's).
func checkEvent(typ string, payload []byte) error {
	if typ == "" || len(typ) > 32 || strings.Trim(typ, "abcdefghijklmnopqrstuvwxyz_") != "" {
		return errors.New("cluster: an event whose type is not a name")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(payload, &fields); err != nil {
		return errors.New("cluster: an event whose payload is not a JSON object")
	}
	for _, k := range []string{"type", "thread", "seq", "ts", "restated"} {
		if _, ok := fields[k]; ok {
			return fmt.Errorf("cluster: an event whose payload names the frame's field %q", k)
		}
	}
	return nil
}

// checkNotice is a notice a summary may carry: a seq and a short code (the
// hub's push service gives the words, by code); anything else is dropped.
func checkNotice(n *push.Notice) *push.Notice {
	if n == nil || n.Seq <= 0 || n.Code == "" || len(n.Code) > push.MaxNoticeCode {
		return nil
	}
	n.Text = "" // a turn's or an error's words never cross
	return n
}

// checkNotices keeps the notice events of a summary that are well formed:
// at most maxSummaryNotices, each with a seq, a level and words no longer
// than a push shows.
func checkNotices(ns []push.Notice) []push.Notice {
	var out []push.Notice
	for _, n := range ns {
		if len(out) == maxSummaryNotices {
			break
		}
		if n.Seq <= 0 || !chat.ValidNoticeLevel(n.Code) || n.Text == "" || !utf8.ValidString(n.Text) ||
			utf8.RuneCountInString(n.Text) > push.MaxNoticeText {
			continue
		}
		out = append(out, n)
	}
	return out
}

// joinRequest is what `parley join` sends.
type joinRequest struct {
	Token   string `json:"token"`
	Node    string `json:"node"`
	Key     string `json:"key"`
	Version string `json:"version"`
	// Protocol is the joiner's cluster protocol (protocol.go); 0 is 1.
	Protocol int `json:"protocol,omitempty"`
	// Seal is the joiner's curve public key (nkeys xkey): the hub's answer
	// is sealed to it (hub_join.go). Empty from a joiner before it.
	Seal string `json:"seal,omitempty"`
}

// sessionsAnswer is a node's answer to a sessions request.
type sessionsAnswer struct {
	Sessions []sessions.Session `json:"sessions"`
	Error    string             `json:"error,omitempty"`
}

// maxSessionsAnswer bounds what the hub takes of a node's list (NATS
// carries at most 8 MiB a message); the node cuts its newest-first list to it.
const maxSessionsAnswer = 4 << 20
