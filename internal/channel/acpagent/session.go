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
	"github.com/parleyhq/parley/internal/hub"
)

// session is one ACP session: a route, its hub subscription, and the pump that
// turns the route's events into session/update notifications.
type session struct {
	id     string
	route  chat.RouteKey
	sub    *hub.Sub
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
	// owned by the pump goroutine
	thread  chat.ThreadID
	lastSeq int64
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
	failed string
}

func (w *waiter) done(o outcome) { w.once.Do(func() { w.ch <- o }) }
func (w *waiter) fail(detail string) {
	if detail == "" {
		detail = "failed"
	}
	w.done(outcome{failed: detail})
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
	sub, th, err := a.d.Router.Subscribe(ctx, route, a.opt.Buffer)
	if err != nil {
		return chat.Thread{}, err
	}
	if th == nil && later == nil {
		a.d.Hub.Unsubscribe(sub)
		return chat.Thread{}, chat.ErrNotFound
	}
	var thread chat.ThreadID
	if th != nil {
		thread = th.ID
	}
	pctx, cancel := a.spawnCtx()
	s := &session{id: route.Chat, route: route, sub: sub, cancel: cancel, ended: make(chan struct{}),
		waiters: map[string][]*waiter{}, asking: map[string]context.CancelFunc{}, shownCh: make(chan struct{}), later: later}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		cancel()
		a.d.Hub.Unsubscribe(sub)
		return chat.Thread{}, chat.ErrClosed
	}
	old := a.sessions[s.id]
	a.sessions[s.id] = s
	a.wg.Add(1) // under the lock: never after Serve has begun to wait
	a.mu.Unlock()
	if old != nil {
		old.cancel()
		<-old.ended
		a.d.Hub.Unsubscribe(old.sub)
	}
	since := int64(0)
	if !history {
		since = -1
	}
	replayed := make(chan error, 1)
	go func() {
		defer a.wg.Done()
		defer close(s.ended)
		a.pump(pctx, s, thread, since, replayed)
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

// pump replays, then follows the route live until the session ends. A
// subscription the hub dropped for falling behind is renewed and caught up from
// the log, so the client misses nothing.
func (a *agent) pump(ctx context.Context, s *session, thread chat.ThreadID, since int64, replayed chan<- error) {
	log := a.log.With("session", s.id)
	var err error
	if thread != "" { // else the route's first thread comes as a switch
		err = a.show(ctx, s, thread, since)
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
		case <-s.sub.Ready():
			for _, it := range s.sub.Take() {
				if it.Switch {
					if err := a.show(ctx, s, it.Thread, -1); err != nil {
						log.Warn("acp: switch", "err", err)
					}
					continue
				}
				if it.Thread != s.thread || it.Seq <= s.lastSeq {
					continue
				}
				var ev chat.Event
				if err := json.Unmarshal(it.Frame, &frameHead{&ev}); err != nil {
					log.Warn("acp: frame", "err", err)
					continue
				}
				ev.Payload = it.Frame
				a.emit(ctx, s, ev, false)
				s.lastSeq = it.Seq
				a.opt.Cursors.set(s.route, s.thread, s.lastSeq, time.Now())
			}
		case <-s.sub.Done():
			if ctx.Err() != nil || a.d.Hub.Reason(s.sub) != hub.ReasonSlow {
				return // the session or parley is ending
			}
			// Dropped for falling behind: subscribe again and catch up. The
			// router's call is not cut short by ctx (its answer must be read).
			sub, th, err := a.d.Router.Subscribe(context.WithoutCancel(ctx), s.route, a.opt.Buffer)
			if err != nil || th == nil || ctx.Err() != nil {
				if sub != nil {
					a.d.Hub.Unsubscribe(sub)
				}
				log.Debug("acp: session ends", "err", err)
				return
			}
			s.sub = sub
			if th.ID != s.thread {
				if err := a.show(ctx, s, th.ID, -1); err != nil {
					return
				}
				continue
			}
			if err := a.catchUp(ctx, s); err != nil {
				return
			}
		}
	}
}

// frameHead reads type, thread and seq from a wire frame into an Event.
type frameHead struct{ ev *chat.Event }

func (h *frameHead) UnmarshalJSON(b []byte) error {
	var v struct {
		Type   string        `json:"type"`
		Thread chat.ThreadID `json:"thread"`
		Seq    int64         `json:"seq"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	h.ev.Type, h.ev.Thread, h.ev.Seq = v.Type, v.Thread, v.Seq
	return nil
}

// show makes s follow thread: a _parley/thread notice, the log after since
// (nothing when since < 0), the open cards asked again, then live.
func (a *agent) show(ctx context.Context, s *session, id chat.ThreadID, since int64) error {
	th, err := a.d.Store.Thread(ctx, id)
	if err != nil {
		return err
	}
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
	s.thread = id
	a.ext(ctx, s.id, "thread", mustJSON(chat.ThreadEvent{Thread: th}))
	if cur, ok := a.opt.Cursors.get(s.route); since < 0 && ok && cur.thread == id && cur.seq < th.LastSeq {
		since = cur.seq // this route's client was away: send what it missed
	}
	if since < 0 {
		s.lastSeq = th.LastSeq
	} else {
		s.lastSeq = since
	}
	if err := a.catchUp(ctx, s); err != nil {
		return err
	}
	open, err := a.d.Store.Cards(ctx, id, chat.CardOpen)
	if err != nil {
		return err
	}
	for _, c := range open {
		ev := chat.Event{Type: chat.TypePermissionRequest, Thread: id, Payload: c.Request}
		if c.Kind == chat.CardQuestion {
			ev.Type = chat.TypeQuestion
		}
		ev.Payload = ev.Frame()
		a.emit(ctx, s, ev, false)
	}
	s.mu.Lock()
	s.shown = id
	close(s.shownCh)
	s.shownCh = make(chan struct{})
	s.mu.Unlock()
	return nil
}

func (a *agent) catchUp(ctx context.Context, s *session) error {
	const page = 1000
	for {
		evs, err := a.d.Store.Events(ctx, s.thread, s.lastSeq, page)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			ev.Payload = ev.Frame() // emit works on wire frames, as the hub delivers them
			a.emit(ctx, s, ev, true)
			s.lastSeq = ev.Seq
			a.opt.Cursors.set(s.route, s.thread, s.lastSeq, time.Now())
		}
		if len(evs) < page {
			return nil
		}
	}
}

// emit sends one event to the client. Replayed cards are not asked (the open
// ones are asked again after the replay); replayed turn ends answer no prompt.
func (a *agent) emit(ctx context.Context, s *session, ev chat.Event, replay bool) {
	switch ev.Type {
	case chat.TypePermissionRequest:
		if !replay {
			var p chat.PermissionRequest
			if ev.Decode(&p) == nil {
				a.askPermission(ctx, s, p)
			}
		}
		a.ext(ctx, s.id, ev.Type, ev.Payload)
		return
	case chat.TypeQuestion:
		if !replay {
			var q chat.Question
			if ev.Decode(&q) == nil {
				a.askQuestion(ctx, s, q)
			}
		}
		a.ext(ctx, s.id, ev.Type, ev.Payload)
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
				a.ext(ctx, s.id, ev.Type, ev.Payload)
				s.finish(p.MessageID, outcome{stop: p.StopReason})
				return
			}
		}
	case chat.TypeUserMessage:
		var m chat.UserMessage
		if ev.Decode(&m) == nil && (replay || m.From != s.route) {
			u := acp.UpdateUserMessageText(m.Text)
			u.UserMessageChunk.Meta = map[string]any{"parley/message_id": m.MessageID, "parley/from": m.From}
			a.update(ctx, s.id, u)
		}
		a.ext(ctx, s.id, ev.Type, ev.Payload)
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
	a.ext(ctx, s.id, ev.Type, ev.Payload)
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
