package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/follow"
	"github.com/parleyhq/parley/internal/hub"
)

// What a node tells its hub of its threads (docs/multi-machine.md):
//
//   - each committed event, live, on parley.from.<node>.t.<thread>.ev: the
//     payload as stored, its type, seq and time in headers (the hub builds
//     the frame once, as a local thread's is built);
//   - each thread's summary in KV parley_threads under <node>.<thread>,
//     written when it changes and all of them at every link-up;
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
// store's JSON leaves out.
type wireThread struct {
	chat.Thread
	Turn string `json:"turn_message_id,omitempty"`
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
)

type srcRequest struct {
	Op     string        `json:"op"`
	Thread chat.ThreadID `json:"thread"`
	Since  int64         `json:"since,omitempty"`
	Limit  int           `json:"limit,omitempty"` // events; tail's n
	State  string        `json:"state,omitempty"` // cards
}

type srcAnswer struct {
	Thread   *wireThread       `json:"thread,omitempty"`
	Events   []wireEvent       `json:"events,omitempty"`
	Cards    []chat.Card       `json:"cards,omitempty"`
	Usage    *chat.UsageTotals `json:"usage,omitempty"`
	More     bool              `json:"more,omitempty"` // events: the page was cut to fit; ask again after the last
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
	if _, err := l.nc.Subscribe(sourceSubject(l.opt.Node), l.answerSource); err != nil {
		return err
	}
	l.watch = l.opt.Events.Watch()
	l.wg.Add(1)
	go l.summaries()
	return nil
}

// publishEvent runs on the publishing lane: it never waits (a link that is
// down buffers a little, then drops; a viewer at the hub backfills by seq).
func (l *Link) publishEvent(it hub.Item) {
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
// link-up (those changed while the hub was away).
func (l *Link) summaries() {
	defer l.wg.Done()
	all := true
	for {
		if l.nc.IsConnected() {
			var err error
			if all {
				err = l.writeAllSummaries()
			} else {
				err = l.writeSummaries(l.watch.Take())
			}
			if err != nil {
				l.log.Warn("cluster: thread summaries", "err", err)
			}
			all = err != nil // a failed write is made good by writing them all
		}
		select {
		case <-l.done:
			return
		case <-l.watch.Ready():
		case <-l.upKick:
			all = true
		}
	}
}

func (l *Link) writeAllSummaries() error {
	l.watch.Take() // every thread is written below
	ctx, cancel := context.WithTimeout(l.life, time.Minute)
	defer cancel()
	ths, err := l.opt.Store.Threads(ctx)
	if err != nil {
		return err
	}
	for _, th := range ths {
		if err := l.putSummary(ctx, th); err != nil {
			return err
		}
	}
	return nil
}

func (l *Link) writeSummaries(ids []chat.ThreadID) error {
	ctx, cancel := context.WithTimeout(l.life, time.Minute)
	defer cancel()
	for _, id := range ids {
		th, err := l.opt.Store.Thread(ctx, id)
		if errors.Is(err, chat.ErrNotFound) {
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
	b, err := json.Marshal(toWire(th))
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
			evs = evs[:keep]
		}
		for _, ev := range evs {
			ans.Events = append(ans.Events, wireEvent{Type: ev.Type, Seq: ev.Seq, TS: ev.TS, Payload: ev.Payload})
		}
	case opCards:
		ans.Cards, err = st.Cards(ctx, req.Thread, req.State)
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
