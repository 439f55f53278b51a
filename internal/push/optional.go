package push

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/store"
)

// Prefs are a device's optional pushes, off until the device turns them on.
type Prefs struct {
	Turns  bool `json:"turns"`  // a turn finished
	Errors bool `json:"errors"` // the agent or parley failed in a thread
}

// tailScan bounds how far back a thread's log is read for finished turns and
// errors on each change: a turn's end is among its last events.
const tailScan = 64

// errorWords says what an error in a thread's log means, by code: the words a
// push shows, never the error's own text (an agent's stderr may hold
// anything). Errors answering one input (bad input, busy…) are the sender's
// own business and push nothing.
var errorWords = map[string]string{
	chat.CodeAgent:     "the agent failed",
	chat.CodeInternal:  "parley failed",
	chat.CodeRestart:   "parley restarted during the turn",
	chat.CodeNoHistory: "its session history was lost",
}

// Prefs reports a device's optional pushes.
func (s *Service) Prefs(device string) Prefs {
	all, err := s.opt.Store.PushPrefs(context.Background())
	if err != nil {
		s.log.Error("push: prefs", "err", err)
		return Prefs{}
	}
	for _, p := range all {
		if p.Device == device {
			return Prefs{Turns: !p.Turns.IsZero(), Errors: !p.Errors.IsZero()}
		}
	}
	return Prefs{}
}

// SetPrefs turns a device's optional pushes on or off (nil: as it is) in one
// store update, so a change made meanwhile elsewhere to the other one stays;
// it answers the device's pushes as they are now. One turned on now pushes
// what happens from now on, never what came before; one already on keeps its
// time.
func (s *Service) SetPrefs(device string, turns, errors *bool) (Prefs, error) {
	if err := s.opt.Store.PushSetPrefs(context.Background(), store.PushPrefsChange{Device: device, Turns: turns, Errors: errors,
		At: s.opt.Now()}); err != nil {
		return Prefs{}, err
	}
	return s.Prefs(device), nil
}

// reconcileOptional writes to the outbox a push per finished turn and per
// error in a thread's recent log, for each subscription of a device that
// turned that push on before it happened (and subscribed before). Keyed by the
// event's seq, like a card's pushes by its request id: once each.
func (s *Service) reconcileOptional(ctx context.Context, id chat.ThreadID) {
	prefs, err := s.opt.Store.PushPrefs(ctx)
	if err != nil {
		s.log.Error("push: prefs", "err", err)
		return
	}
	on := map[string]store.PushPrefs{}
	for _, p := range prefs {
		if !p.Turns.IsZero() || !p.Errors.IsZero() {
			on[p.Device] = p
		}
	}
	if len(on) == 0 {
		return
	}
	evs, err := s.opt.Store.Tail(ctx, id, tailScan)
	if err != nil {
		s.log.Error("push: log", "thread", id, "err", err)
		return
	}
	var th *chat.Thread
	var subs []store.PushSubscription
	var items []store.PushItem
	now := s.opt.Now()
	for _, ev := range evs {
		kind, body := optionalPush(ev)
		if kind == "" {
			continue
		}
		if th == nil {
			t, err := s.opt.Store.Thread(ctx, id)
			if err != nil {
				s.log.Error("push: thread", "thread", id, "err", err)
				return
			}
			th = &t
			if subs, err = s.opt.Store.PushSubscriptions(ctx); err != nil {
				s.log.Error("push: subscriptions", "err", err)
				return
			}
		}
		payload := s.optionalPayload(*th, kind, body)
		for _, sub := range subs {
			p, ok := on[sub.Device]
			since := p.Turns
			if kind == store.PushError {
				since = p.Errors
			}
			if !ok || since.IsZero() || ev.TS.Before(since) || ev.TS.Before(sub.Created) {
				continue
			}
			if s.opt.Live != nil && !s.opt.Live(sub.Device) {
				continue // dropped with its device by the sender
			}
			state := store.PushPending
			if s.opt.OnScreen != nil && s.opt.OnScreen(sub.Device, id) {
				state = store.PushSkipped
			}
			items = append(items, store.PushItem{Endpoint: sub.Endpoint, Thread: id, RequestID: "seq:" + strconv.FormatInt(ev.Seq, 10),
				Kind: kind, Payload: payload, State: state, NextAt: now})
		}
	}
	if _, err := s.opt.Store.PushEnqueue(ctx, items); err != nil {
		s.log.Error("push: outbox", "thread", id, "err", err)
	}
}

// optionalPush tells whether an event calls for an optional push: its kind
// and what the push says.
func optionalPush(ev chat.Event) (kind, body string) {
	switch ev.Type {
	case chat.TypePromptDone:
		var p chat.PromptDone
		if json.Unmarshal(ev.Payload, &p) != nil {
			return "", ""
		}
		switch p.StopReason {
		case chat.StopEndTurn:
			return store.PushTurn, "finished its turn"
		case chat.StopMaxTokens:
			return store.PushTurn, "stopped: the model's output limit"
		case chat.StopRefusal:
			return store.PushTurn, "stopped: the model declined"
		}
	case chat.TypeError:
		var e chat.Error
		// By code, not by ref: the errors that end a turn (the agent's
		// process dying mid-turn, a restart) name the turn's message in ref.
		if json.Unmarshal(ev.Payload, &e) != nil {
			return "", ""
		}
		if w, ok := errorWords[e.Code]; ok {
			return store.PushError, w
		}
	}
	return "", ""
}

// ThreadTag is the notification tag of a thread's optional pushes: a newer
// one replaces the older.
func ThreadTag(thread chat.ThreadID) string { return "parley-thread:" + string(thread) }

func (s *Service) optionalPayload(th chat.Thread, kind, body string) []byte {
	b, _ := json.Marshal(Message{Kind: kind, Title: s.title(th), Body: body, Tag: ThreadTag(th.ID),
		URL: threadURL(th.ID, ""), Thread: string(th.ID)})
	return b
}
