package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The node's end of the input protocol (inputs.go): the hub's requests
// taken in order, each input applied once and answered after its commit.

// serveInputs answers the hub's input requests on the node. The subscription
// outlives reconnects. Requests are answered one at a time, in order, by one
// goroutine; each is stamped when it reaches this machine, so the time it
// waits here behind others counts against its budget (the hub's wait began
// before it): one the hub has given up on is not applied after it said so.
func (l *Link) serveInputs(apply InputHandler) error {
	queue := make(chan askedInput, inputQueue)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		for {
			select {
			case a := <-queue:
				l.answerInput(a, apply)
			case <-l.done:
				return
			}
		}
	}()
	_, err := l.nc.Subscribe(inputSubject(l.opt.Node), func(m *nats.Msg) {
		// Only the hub's own requests: a reply subject is anyone's choice (a
		// JetStream ack to another node's publish can land here), and the hub
		// alone asks from its inbox.
		if !strings.HasPrefix(m.Reply, hubInbox+".") {
			l.log.Warn("cluster: ignored a message on the input subject that is not the hub's request", "reply", m.Reply)
			return
		}
		select {
		case queue <- askedInput{m: m, at: time.Now()}:
		default:
			// Not applied, and said so: the hub hands a stream's input over
			// again later; an asked one fails with the reason.
			l.respondInput(m, inputAnswer{Error: "too many inputs waiting on this machine; not applied"})
		}
	})
	return err
}

// inputQueue bounds the inputs waiting on a node to be applied.
const inputQueue = 1024

// answerMargin is kept back from an input's budget for the answer's way to
// the hub (which stops waiting when the budget ends).
const answerMargin = 500 * time.Millisecond

// askedInput is an input request and when it reached this machine.
type askedInput struct {
	m  *nats.Msg
	at time.Time
}

func (l *Link) answerInput(in askedInput, apply InputHandler) {
	m := in.m
	id := m.Header.Get(jetstream.MsgIDHeader)
	within := inputTimeout
	if d, err := time.ParseDuration(m.Header.Get(withinHeader)); err == nil && d > 0 && d < within {
		within = d
	}
	within -= time.Since(in.at) + min(answerMargin, within/10)
	res, again, err := l.applyOnce(id, m.Data, within, apply)
	a := inputAnswer{Result: res, Again: again}
	if err != nil {
		var r *Refusal
		a = inputAnswer{Error: err.Error(), Refused: errors.As(err, &r)}
		if a.Refused {
			a.Code = chatErrorCode(r.Err)
		}
	}
	l.respondInput(m, a)
}

func (l *Link) respondInput(m *nats.Msg, a inputAnswer) {
	b, _ := json.Marshal(a)
	if err := m.Respond(b); err != nil {
		l.log.Warn("cluster: answer an input", "id", m.Header.Get(jetstream.MsgIDHeader), "err", err)
	}
}

// applyOnce applies an input unless this link already applied its id (the
// hub did not get the answer and handed it over again, or it was sent
// again): then its first result is answered again, and again says so.
func (l *Link) applyOnce(id string, data []byte, within time.Duration, apply InputHandler) (res []byte, again bool, err error) {
	if id == "" {
		return nil, false, &Refusal{Reason: "an input without a message id"}
	}
	if res, ok := l.applied.get(id); ok {
		return res, true, nil
	}
	if within <= 0 {
		// It waited here until the hub stopped waiting for it (and told the
		// sender so): not applied now. A stream's input comes again.
		return nil, false, errors.New("it waited on this machine past its time; not applied")
	}
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if res, err = apply(ctx, id, data); err != nil {
		return nil, false, err
	}
	l.applied.add(id, res)
	return res, false, nil
}

// idSet remembers the last n ids added, with their results.
type idSet struct {
	mu   sync.Mutex
	n    int
	ids  map[string][]byte
	ring []string
	next int
}

func newIDSet(n int) *idSet {
	return &idSet{n: n, ids: make(map[string][]byte, n), ring: make([]string, n)}
}

func (s *idSet) has(id string) bool { _, ok := s.get(id); return ok }

func (s *idSet) get(id string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	res, ok := s.ids[id]
	return res, ok
}

func (s *idSet) add(id string, res []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.ids[id]; ok {
		return
	}
	delete(s.ids, s.ring[s.next])
	s.ring[s.next] = id
	s.ids[id] = res
	s.next = (s.next + 1) % s.n
}
