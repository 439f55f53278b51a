package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/store"
)

// Bounds of a source answer: NATS carries at most MaxPayload (8 MiB) a
// message, so a page of events is cut at srcAnswerBytes and says More.
const (
	srcAnswerBytes = 4 << 20
	srcMaxLimit    = 1000
)

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
