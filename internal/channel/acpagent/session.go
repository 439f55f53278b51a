package acpagent

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/fanout"
	"github.com/parleyhq/parley/internal/follow"
)

// session is one ACP session: a route, its follower, and the pump that turns
// the route's events into session/update notifications.
type session struct {
	id     string
	route  chat.RouteKey
	f      *follow.Follower // owned by the pump; closed once ended is
	cancel context.CancelFunc
	ended  chan struct{}

	mu      sync.Mutex
	waiters map[string][]*waiter          // message id → its prompt calls (a repeated id waits too)
	asking  map[string]context.CancelFunc // card request id → the pending client request
	shown   chat.ThreadID                 // the thread the session follows, once show has sent it
	shownCh chan struct{}                 // closed (and replaced) each time show has finished
	// later is how the route's first thread is made, for a session opened on a
	// route without one (nil otherwise)
	later *laterThread
}

// laterThread is how a thread is made for a route that had none when its
// session opened.
type laterThread struct {
	cwd    string
	plugin bool // a plugin's chat: outside the roots, the agent's first root
}

// showing returns the thread the session follows and a channel closed when
// that changes.
func (s *session) showing() (chat.ThreadID, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shown, s.shownCh
}

type waiter struct {
	ch   chan outcome
	once sync.Once
}

type outcome struct {
	stop   string
	failed string // the message ended without a turn: why
	// unknown: it ended without a turn here, and may have reached the
	// agent (its receipt reads unknown): failed says why.
	unknown bool
}

func (w *waiter) done(o outcome) { w.once.Do(func() { w.ch <- o }) }

// ended ends the wait for a message whose final receipt d is failed or
// unknown: no turn of it will end here.
func (w *waiter) ended(d chat.Delivery) { w.done(endedOutcome(d)) }

func endedOutcome(d chat.Delivery) outcome {
	detail := d.Detail
	if detail == "" {
		detail = string(d.State)
	}
	return outcome{failed: detail, unknown: d.State == chat.DeliveryUnknown}
}

// err is how a prompt whose message ended without a turn answers.
func (o outcome) err() error {
	if o.unknown {
		return acp.NewInternalError(map[string]any{"error": "message may have reached the agent, but no turn of it ended here: " + o.failed})
	}
	return acp.NewInternalError(map[string]any{"error": "message failed: " + o.failed})
}

func (s *session) wait(id string) *waiter {
	w := &waiter{ch: make(chan outcome, 1)}
	s.mu.Lock()
	s.waiters[id] = append(s.waiters[id], w)
	s.mu.Unlock()
	return w
}

func (s *session) unwait(id string, w *waiter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ws := slices.DeleteFunc(s.waiters[id], func(x *waiter) bool { return x == w })
	if len(ws) == 0 {
		delete(s.waiters, id)
	} else {
		s.waiters[id] = ws
	}
}

func (s *session) waiting(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.waiters[id]) > 0
}

// finish tells every prompt call waiting on message id how its turn ended.
func (s *session) finish(id string, o outcome) {
	s.mu.Lock()
	ws := slices.Clone(s.waiters[id])
	s.mu.Unlock()
	for _, w := range ws {
		w.done(o)
	}
}

// open subscribes a session on route (replacing one of the same id) and starts
// its pump. With history the whole log is replayed before open returns; without,
// only what is open now (cards, the mode) is restated. A route without a thread
// is an error unless later is set: then the session follows the route's first
// thread once one is made (ensureThread), and the zero Thread is returned.
func (a *agent) open(ctx context.Context, route chat.RouteKey, history bool, later *laterThread) (chat.Thread, error) {
	f, th, err := follow.Subscribe(ctx, follow.Deps{Source: a.d.Store, Router: a.d.Router, Hub: a.d.Hub}, route,
		follow.Options{Buffer: a.opt.Buffer, Since: a.resumeAt(route)})
	if err != nil {
		return chat.Thread{}, err
	}
	if th == nil && later == nil {
		f.Close()
		return chat.Thread{}, chat.ErrNotFound
	}
	pctx, cancel := a.spawnCtx()
	s := &session{id: route.Chat, route: route, f: f, cancel: cancel, ended: make(chan struct{}),
		waiters: map[string][]*waiter{}, asking: map[string]context.CancelFunc{}, shownCh: make(chan struct{}), later: later}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		cancel()
		f.Close()
		return chat.Thread{}, chat.ErrClosed
	}
	old := a.sessions[s.id]
	a.sessions[s.id] = s
	a.wg.Add(1) // under the lock: never after Serve has begun to wait
	a.mu.Unlock()
	if old != nil {
		old.cancel()
		<-old.ended
		old.f.Close()
	}
	since := int64(0)
	if !history {
		since = -1
	}
	replayed := make(chan error, 1)
	go func() {
		defer a.wg.Done()
		defer close(s.ended)
		a.pump(pctx, s, th, since, replayed)
	}()
	select {
	case err := <-replayed:
		if err != nil {
			return chat.Thread{}, err
		}
	case <-ctx.Done():
		return chat.Thread{}, ctx.Err()
	}
	if th == nil {
		return chat.Thread{}, nil
	}
	return *th, nil
}

// resumeAt is where a thread shown without history starts for route: where
// this route's client was, when it was away from the same thread (so it gets
// what it missed); else nothing of the log, only what is open.
func (a *agent) resumeAt(route chat.RouteKey) func(chat.Thread) int64 {
	return func(th chat.Thread) int64 {
		if cur, ok := a.opt.Cursors.get(route); ok && cur.thread == th.ID && cur.seq < th.LastSeq {
			return cur.seq
		}
		return th.LastSeq
	}
}

// pump shows the route's thread, then follows it live until the session ends.
// A subscription the hub dropped for falling behind is renewed and caught up
// from the log, so the client misses nothing.
func (a *agent) pump(ctx context.Context, s *session, th *chat.Thread, since int64, replayed chan<- error) {
	log := a.log.With("session", s.id)
	show := func(it follow.Item) error { a.show(ctx, s, it); return nil }
	var err error
	if th != nil { // else the route's first thread comes as a switch
		err = s.f.Show(ctx, th.ID, since, show)
	}
	replayed <- err
	if err != nil {
		log.Warn("acp: replay", "err", err)
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.f.Sub().Ready():
			if _, err := s.f.Live(ctx, show); err != nil {
				log.Warn("acp: switch", "err", err)
			}
		case <-s.f.Sub().Done():
			if ctx.Err() != nil || s.f.Dropped() != fanout.ReasonSlow {
				return // the session or parley is ending
			}
			// Dropped for falling behind: subscribe again and catch up.
			if err := s.f.Renew(ctx, show); err != nil {
				log.Debug("acp: session ends", "err", err)
				return
			}
		}
	}
}

// show hands one item of the follower to the client: a _parley/thread notice
// when the session moves to a thread, the log (replayed events answer no
// prompt and ask no card), the open cards asked again, then live events.
func (a *agent) show(ctx context.Context, s *session, it follow.Item) {
	switch it.Kind {
	case follow.KindThread:
		// Cards of the thread shown before are no longer this client's to answer.
		s.mu.Lock()
		for rid, cancel := range s.asking {
			cancel()
			delete(s.asking, rid)
		}
		for mid, ws := range s.waiters {
			for _, w := range ws {
				w.done(outcome{stop: chat.StopEndTurn}) // the route moved on; the turn goes on elsewhere
			}
			delete(s.waiters, mid)
		}
		s.mu.Unlock()
		a.ext(ctx, s.id, "thread", mustJSON(chat.ThreadEvent{Thread: it.Thread}))
	case follow.KindEvent, follow.KindCard:
		a.emit(ctx, s, it.Event, it.Frame, it.Replay)
		if it.Kind == follow.KindEvent && it.Event.Seq > 0 { // an aside (no seq) is no place in the log
			a.opt.Cursors.set(s.route, it.Event.Thread, it.Event.Seq, time.Now())
		}
	case follow.KindCaughtUp:
		if id := s.f.Thread(); id != "" {
			s.mu.Lock()
			s.shown = id
			close(s.shownCh)
			s.shownCh = make(chan struct{})
			s.mu.Unlock()
		}
	}
	// KindPruned and KindTurn: the ACP side shows neither.
}

// emit sends one event (frame is its wire frame) to the client. Replayed cards are not asked (the open
// ones are asked again after the replay); replayed turn ends answer no prompt.
func (a *agent) emit(ctx context.Context, s *session, ev chat.Event, frame []byte, replay bool) {
	switch ev.Type {
	case chat.TypePermissionRequest:
		if !replay {
			var p chat.PermissionRequest
			if ev.Decode(&p) == nil {
				a.askPermission(ctx, s, p)
			}
		}
		a.ext(ctx, s.id, ev.Type, frame)
		return
	case chat.TypeQuestion:
		if !replay {
			var q chat.Question
			if ev.Decode(&q) == nil {
				a.askQuestion(ctx, s, q)
			}
		}
		a.ext(ctx, s.id, ev.Type, frame)
		return
	case chat.TypePermissionResolved, chat.TypeQuestionResolved:
		var r struct {
			RequestID string `json:"request_id"`
		}
		if ev.Decode(&r) == nil {
			s.mu.Lock()
			if cancel := s.asking[r.RequestID]; cancel != nil {
				cancel() // answered elsewhere: the client's pending request is cancelled
				delete(s.asking, r.RequestID)
			}
			s.mu.Unlock()
		}
	case chat.TypePromptDone:
		var p chat.PromptDone
		if !replay && ev.Decode(&p) == nil {
			if s.waiting(p.MessageID) {
				a.ext(ctx, s.id, ev.Type, frame)
				s.finish(p.MessageID, outcome{stop: p.StopReason})
				return
			}
		}
	case chat.TypeDelivery:
		// A message for another machine's thread that ended at the hub
		// after its send returned (it waited for that machine), failed or
		// in doubt, ends its prompt here: no turn of it will.
		var d chat.Delivery
		if !replay && ev.Decode(&d) == nil && (d.State == chat.DeliveryFailed || d.State == chat.DeliveryUnknown) && s.waiting(d.MessageID) {
			s.finish(d.MessageID, endedOutcome(d))
		}
	case chat.TypeUserMessage:
		var m chat.UserMessage
		if ev.Decode(&m) == nil && (replay || m.From != s.route) {
			u := acp.UpdateUserMessageText(m.Text)
			u.UserMessageChunk.Meta = map[string]any{"parley/message_id": m.MessageID, "parley/from": m.From}
			if m.Origin != nil {
				u.UserMessageChunk.Meta["parley/origin"] = m.Origin // a schedule or trigger sent it
			}
			a.update(ctx, s.id, u)
		}
		a.ext(ctx, s.id, ev.Type, frame)
		return
	}
	if ev.Type == chat.TypeMode {
		var m chat.Mode
		if ev.Decode(&m) == nil && m.Current != "" {
			a.rememberMode(ev.Thread, m)
		}
	}
	if u, ok := toUpdate(ev); ok {
		a.update(ctx, s.id, u)
		return
	}
	a.ext(ctx, s.id, ev.Type, frame)
}

func (a *agent) update(ctx context.Context, sid string, u acp.SessionUpdate) {
	if err := a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: acp.SessionId(sid), Update: u}); err != nil {
		a.log.Debug("acp: session/update", "err", err)
	}
}

// ext sends a parley-only event as a `_parley/<type>` notification whose params
// are {"sessionId", "event": <the event's wire frame>}.
func (a *agent) ext(ctx context.Context, sid, typ string, frame json.RawMessage) {
	err := a.conn.NotifyExtension(ctx, "_parley/"+typ, map[string]any{"sessionId": sid, "event": frame})
	if err != nil && !errors.Is(err, context.Canceled) {
		a.log.Debug("acp: extension notification", "type", typ, "err", err)
	}
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
