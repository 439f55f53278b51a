package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/fanout"
	"github.com/parleyhq/parley/internal/follow"
	"github.com/parleyhq/parley/internal/push"
	"github.com/parleyhq/parley/internal/store"
)

// What a node tells its hub of its threads (docs/multi-machine.md):
//
//   - each committed event, live, on parley.from.<node>.t.<thread>.ev: the
//     payload as stored, its type, seq and time in headers (the hub builds
//     the frame once, as a local thread's is built);
//   - each thread's summary (parley.from.<node>.threads.sum.<thread>, which
//     carries its open cards and its newest finished turn and error by seq
//     and code, never their text: the hub's phones hear of them; and which
//     the hub writes into KV parley_threads under <node>.<thread>), sent
//     when it changes and all of them at every link-up; a thread deleted on
//     the node is said gone (parley.from.<node>.threads.gone.<thread>), and
//     after the summaries of a link-up the node names every thread it has
//     (parley.from.<node>.threads.all), so one deleted while the hub was
//     away leaves the hub's list too; all from one goroutine, and taken at
//     the hub in that order (records.go);
//   - the answers to source requests on parley.to.<node>.src: a thread, its
//     events after a seq, its tail, its cards, read from the node's store.
//
// The node's SQLite stays the only truth: all of this is read from it or
// from what its lanes publish after their commit.

// NodeStore is what a node reads to answer and summarize: the route
// follower's Source, the thread list and a thread's usage.
type NodeStore interface {
	follow.Source
	Threads(ctx context.Context) ([]chat.Thread, error)
	Usage(ctx context.Context, thread chat.ThreadID) (chat.UsageTotals, error)
	Search(ctx context.Context, query string, limit int) ([]chat.SearchHit, error)
	AskThread(ctx context.Context, askID string) (chat.ThreadID, error)
	Input(ctx context.Context, from chat.RouteKey, messageID string) (chat.Input, error)
}

// Event headers on parley.from.<node>.t.<thread>.ev.
const (
	hdrType = "Parley-Type"
	hdrSeq  = "Parley-Seq"
	hdrTS   = "Parley-TS"
)

// EventSubject is where node publishes thread's live events.
func EventSubject(node string, thread chat.ThreadID) string {
	return FromSubject(node) + ".t." + string(thread) + ".ev"
}

func sourceSubject(node string) string { return ToSubject(node) + ".src" }

// ThreadKey is the thread-summary key of node's thread in parley_threads.
func ThreadKey(node string, thread chat.ThreadID) string { return node + "." + string(thread) }

// wireThread is a thread as it crosses the link: with its turn, which the
// store's JSON leaves out, and in a summary its open cards, its newest
// finished turn and its newest error (the hub pushes them to its phones).
type wireThread struct {
	chat.Thread
	Turn      string       `json:"turn_message_id,omitempty"`
	Cards     []OpenCard   `json:"open_cards,omitempty"`
	LastTurn  *push.Notice `json:"last_turn,omitempty"`
	LastError *push.Notice `json:"last_error,omitempty"`
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

// Bounds of a summary's open cards: it must fit a directory value (64 KiB)
// whatever the agent asks. Only the newest maxSummaryCards are told (the
// hub's list shows the newest, as a machine's own does), and none with a
// longer request id (the hub pushes none for them).
const (
	maxSummaryCards = 16
	maxCardID       = 256
	maxCardAsks     = 160
)

// openCards is what a summary tells of a thread's open cards (cs oldest
// first, as the store lists them): the newest, oldest first.
func openCards(cs []chat.Card) []OpenCard {
	var out []OpenCard
	for i := len(cs) - 1; i >= 0 && len(out) < maxSummaryCards; i-- {
		c := cs[i]
		if c.RequestID == "" || len(c.RequestID) > maxCardID {
			continue
		}
		asks := c.Asks()
		if len(asks) > maxCardAsks {
			asks = strings.ToValidUTF8(asks[:maxCardAsks], "") + "…"
		}
		out = append(out, OpenCard{RequestID: c.RequestID, Kind: c.Kind, Asks: asks})
	}
	slices.Reverse(out)
	return out
}

func toWire(th chat.Thread) wireThread { return wireThread{Thread: th, Turn: th.TurnMessageID} }

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

// Bounds of a source answer: NATS carries at most MaxPayload (8 MiB) a
// message, so a page of events is cut at srcAnswerBytes and says More.
const (
	srcAnswerBytes = 4 << 20
	srcMaxLimit    = 1000
)

// serveNode publishes the node's events and summaries and answers source
// requests; l.opt.Store and l.opt.Events are set.
func (l *Link) serveNode() error {
	l.opt.Events.SetTap(l.publishEvent)
	sub, err := l.nc.Subscribe(sourceSubject(l.opt.Node), l.answerSource)
	if err != nil {
		return err
	}
	l.srcSub = sub
	l.watch = l.opt.Events.Watch()
	l.noticeWatch = l.opt.Events.WatchTypes(chat.TypePromptDone, chat.TypeError)
	l.notices = map[chat.ThreadID]*threadNotices{}
	l.wg.Add(1)
	go l.summaries()
	return nil
}

// publishEvent runs on the publishing lane: it never waits (a link that is
// down buffers a little, then drops; a viewer at the hub backfills by seq).
func (l *Link) publishEvent(it fanout.Item) {
	ev := it.Event
	m := nats.NewMsg(EventSubject(l.opt.Node, ev.Thread))
	m.Header.Set(hdrType, ev.Type)
	m.Header.Set(hdrSeq, strconv.FormatInt(ev.Seq, 10))
	m.Header.Set(hdrTS, ev.TS.UTC().Format(time.RFC3339Nano))
	m.Data = ev.Payload
	if err := l.nc.PublishMsg(m); err != nil && l.nc.IsConnected() {
		l.log.Warn("cluster: publish an event", "thread", ev.Thread, "seq", ev.Seq, "err", err)
	}
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

// summaries writes each changed thread's summary, and every thread's at each
// link-up (those changed while the hub was away) and after a failed write,
// tried again after summaryRetry, doubling to summaryRetryMax.
func (l *Link) summaries() {
	defer l.wg.Done()
	retry := time.NewTimer(summaryRetry)
	retry.Stop()
	defer retry.Stop()
	all := true
	var delay time.Duration // the wait before the next retry; 0 after a good write
	for {
		var again <-chan time.Time // set while a retry is due
		if l.nc.IsConnected() {
			var err error
			if all {
				err = l.writeAllSummaries()
			} else {
				err = l.writeSummaries(l.changed())
			}
			// A failed write is made good by writing them all, after a
			// wait, whether or not anything changes meanwhile (a card
			// answered here must not stay open in the hub's list until the
			// next change); a lost link is made good at its link-up.
			all = err != nil
			if err != nil {
				delay = min(max(2*delay, summaryRetry), summaryRetryMax)
				l.log.Warn("cluster: thread summaries; trying again", "err", err, "in", delay)
				retry.Reset(delay)
				again = retry.C
			} else {
				delay = 0
			}
		}
		select {
		case <-l.done:
			return
		case <-l.watch.Ready():
		case <-l.noticeWatch.Ready():
		case <-l.upKick:
			all = true
		case <-again:
		}
		retry.Stop()
	}
}

// A failed write of the thread summaries is tried again after summaryRetry,
// doubling to summaryRetryMax while it keeps failing.
const (
	summaryRetry    = time.Second
	summaryRetryMax = 30 * time.Second
)

func (l *Link) writeAllSummaries() error {
	l.changed() // every thread is written below
	// No deadline for them all (each summary has its own): a node with
	// thousands of threads on a slow link must finish, not start again.
	ctx := l.life
	ths, err := l.opt.Store.Threads(ctx)
	if err != nil {
		return err
	}
	ids := make([]chat.ThreadID, 0, len(ths))
	for _, th := range ths {
		if err := l.putSummary(ctx, th); err != nil {
			return err
		}
		ids = append(ids, th.ID)
	}
	// The hub purges this node's summaries of threads not named: deleted
	// while it was away. A thread made meanwhile is written after this (the
	// watcher marked it), so it is never purged.
	b, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	if len(b) > maxThreadList {
		l.log.Warn("cluster: too many threads to name at link-up; the hub may still list some deleted while it was away", "threads", len(ids))
		return nil
	}
	sctx, scancel := context.WithTimeout(ctx, summaryTimeout)
	defer scancel()
	return l.publishRecord(sctx, threadListSubject(l.opt.Node), b)
}

func (l *Link) writeSummaries(ids []chat.ThreadID) error {
	ctx, cancel := context.WithTimeout(l.life, time.Minute)
	defer cancel()
	for _, id := range ids {
		th, err := l.opt.Store.Thread(ctx, id)
		if errors.Is(err, chat.ErrNotFound) {
			// Deleted here: the hub drops its summary and ends its views.
			delete(l.notices, id)
			gctx, cancel := context.WithTimeout(ctx, summaryTimeout)
			err = l.publishRecord(gctx, goneSubject(l.opt.Node, string(id)), nil)
			cancel()
			if err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		if err := l.putSummary(ctx, th); err != nil {
			return err
		}
	}
	return nil
}

func (l *Link) putSummary(ctx context.Context, th chat.Thread) error {
	w := toWire(th)
	cards, err := l.opt.Store.Cards(ctx, th.ID, chat.CardOpen)
	if err != nil {
		return err
	}
	w.Cards = openCards(cards)
	n, err := l.noticesOf(ctx, th.ID)
	if err != nil {
		return err
	}
	w.LastTurn, w.LastError = n.turn, n.err
	b, err := json.Marshal(w)
	if err != nil {
		return err
	}
	// One record's answer is waited for briefly: a hub killed after the
	// request left never answers it, and the summaries after it (all of
	// them, at the link-up that follows) must not wait for that.
	ctx, cancel := context.WithTimeout(ctx, summaryTimeout)
	defer cancel()
	return l.publishRecord(ctx, sumSubject(l.opt.Node, string(th.ID)), b)
}

// summaryTimeout bounds the wait for the hub's answer to one summary.
const summaryTimeout = 10 * time.Second

// answerSource answers one source request from the node's store.
func (l *Link) answerSource(m *nats.Msg) {
	if !strings.HasPrefix(m.Reply, hubInbox+".") {
		return // only the hub asks (see serveInputs)
	}
	var req srcRequest
	ans := srcAnswer{}
	if err := json.Unmarshal(m.Data, &req); err != nil {
		ans.Error = "a source request must be JSON"
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		ans = l.source(ctx, req)
		cancel()
	}
	b, err := json.Marshal(ans)
	if err != nil {
		b, _ = json.Marshal(srcAnswer{Error: err.Error()})
	}
	if err := m.Respond(b); err != nil {
		l.log.Warn("cluster: answer a source request", "op", req.Op, "err", err)
	}
}

func (l *Link) source(ctx context.Context, req srcRequest) srcAnswer {
	st := l.opt.Store
	var ans srcAnswer
	var err error
	switch req.Op {
	case opThread:
		var th chat.Thread
		if th, err = st.Thread(ctx, req.Thread); err == nil {
			w := toWire(th)
			ans.Thread = &w
		}
	case opEvents, opTail:
		n := min(max(req.Limit, 1), srcMaxLimit)
		var evs []chat.Event
		if req.Op == opEvents {
			evs, err = st.Events(ctx, req.Thread, req.Since, n)
		} else {
			evs, err = st.Tail(ctx, req.Thread, n)
		}
		// Cut to fit: events keep the oldest (More: ask again after the
		// last), a tail the newest (the follower replays before it by events).
		keep, size := 0, 0
		for i := range evs {
			ev := evs[i]
			if req.Op == opTail {
				ev = evs[len(evs)-1-i]
			}
			size += len(ev.Payload) + 96
			if i > 0 && size > srcAnswerBytes {
				ans.More = req.Op == opEvents
				break
			}
			keep++
		}
		if req.Op == opTail {
			evs = evs[len(evs)-keep:]
		} else {
			// A page cut at srcMaxLimit says so too: a reader asking for
			// more (REST's limit, up to 10,000) asks again after it.
			ans.More = ans.More || req.Limit > n && len(evs) == n
			evs = evs[:keep]
		}
		for _, ev := range evs {
			ans.Events = append(ans.Events, wireEvent{Type: ev.Type, Seq: ev.Seq, TS: ev.TS, Payload: ev.Payload})
		}
	case opCards:
		ans.Cards, err = st.Cards(ctx, req.Thread, req.State)
	case opSearch:
		ans.Hits, err = st.Search(ctx, req.Query, min(max(req.Limit, 1), store.MaxSearchResults))
	case opAsk:
		ans.Asked, err = st.AskThread(ctx, req.Ask)
	case opInput:
		var in chat.Input
		if in, err = st.Input(ctx, req.Route, req.MessageID); err == nil {
			ans.Delivery = &chat.Delivery{MessageID: in.MessageID, State: in.State, Detail: in.Detail}
		}
	case opUsage:
		var u chat.UsageTotals
		if u, err = st.Usage(ctx, req.Thread); err == nil {
			ans.Usage = &u
		}
	default:
		err = errors.New("unknown source operation " + strconv.Quote(req.Op))
	}
	switch {
	case errors.Is(err, chat.ErrNotFound):
		ans = srcAnswer{NotFound: true}
	case err != nil:
		ans = srcAnswer{Error: err.Error()}
	}
	return ans
}
