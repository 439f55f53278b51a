package push

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/store"
)

// Prefs are a device's optional pushes, off until the device turns them on.
type Prefs struct {
	Turns  bool `json:"turns"`  // a turn finished
	Errors bool `json:"errors"` // the agent or parley failed in a thread
	// Notices: a notice in a thread (an agent's notify_person, parley notify).
	Notices bool `json:"notices"`
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
			return Prefs{Turns: !p.Turns.IsZero(), Errors: !p.Errors.IsZero(), Notices: !p.Notices.IsZero()}
		}
	}
	return Prefs{}
}

// SetPrefs turns a device's optional pushes on or off (nil: as it is) in one
// store update, so a change made meanwhile elsewhere to the other one stays;
// it answers the device's pushes as they are now. One turned on now pushes
// what happens from now on, never what came before; one already on keeps its
// time.
func (s *Service) SetPrefs(device string, turns, errors, notices *bool) (Prefs, error) {
	if err := s.opt.Store.PushSetPrefs(context.Background(), store.PushPrefsChange{Device: device, Turns: turns, Errors: errors,
		Notices: notices, At: s.opt.Clock.Now()}); err != nil {
		return Prefs{}, err
	}
	return s.Prefs(device), nil
}

// Notice is a finished turn or an error as an optional push knows it: the
// event's seq and time and its code (a turn's stop reason, an error's code),
// never its text. A node's thread summary carries its thread's newest of each
// (NoticeOf chooses them there, as here).
type Notice struct {
	Seq  int64     `json:"seq"`
	TS   time.Time `json:"ts"`
	Code string    `json:"code"`
	// Text is a notice event's words (NoticeEvent; Code is its level),
	// written for the person by its sender and pushed as they are; empty
	// for a turn or an error.
	Text string `json:"text,omitempty"`
}

// MaxNoticeCode bounds a notice's code: the longest that has words is far
// shorter.
const MaxNoticeCode = 32

// turnWords says what a turn's end means, by its stop reason. A turn the
// person stopped pushes nothing: they know.
var turnWords = map[string]string{
	chat.StopEndTurn:   "finished its turn",
	chat.StopMaxTokens: "stopped: the model's output limit",
	chat.StopRefusal:   "stopped: the model declined",
}

// NoticeOf tells whether an event calls for an optional push: its kind
// (store.PushTurn or store.PushError) and its notice.
func NoticeOf(ev chat.Event) (kind string, n Notice, ok bool) {
	n = Notice{Seq: ev.Seq, TS: ev.TS}
	switch ev.Type {
	case chat.TypePromptDone:
		var p chat.PromptDone
		if json.Unmarshal(ev.Payload, &p) != nil {
			return "", Notice{}, false
		}
		kind, n.Code = store.PushTurn, p.StopReason
	case chat.TypeError:
		var e chat.Error
		// By code, not by ref: the errors that end a turn (the agent's
		// process dying mid-turn, a restart) name the turn's message in ref.
		if json.Unmarshal(ev.Payload, &e) != nil {
			return "", Notice{}, false
		}
		kind, n.Code = store.PushError, e.Code
	default:
		return "", Notice{}, false
	}
	if noticeWords(kind, n.Code) == "" {
		return "", Notice{}, false
	}
	return kind, n, true
}

// noticeWords is what an optional push says of a notice's code: "" for one
// that calls for none (a code a node names that this parley does not know
// among them).
func noticeWords(kind, code string) string {
	switch kind {
	case store.PushTurn:
		return turnWords[code]
	case store.PushError:
		return errorWords[code]
	}
	return ""
}

// optionalPush tells whether an event calls for an optional push: its kind
// and what the push says.
func optionalPush(ev chat.Event) (kind, body string) {
	kind, n, ok := NoticeOf(ev)
	if !ok {
		return "", ""
	}
	return kind, noticeWords(kind, n.Code)
}

// notice is a thread's notice with its kind; text is what a notice event
// (kind store.PushNotice) says, pushed as it is: its sender wrote it for
// the person.
type notice struct {
	kind string
	Notice
	text string
}

// MaxNoticeText bounds a notice's text in a push, in characters.
const MaxNoticeText = 240

// NoticeEvent tells whether ev is a notice event (an agent's notify_person,
// parley notify) and makes its Notice: its level and its text, cut to
// MaxNoticeText. A node's thread summary carries its newest ones.
func NoticeEvent(ev chat.Event) (Notice, bool) {
	n, ok := noticeEvent(ev)
	if !ok {
		return Notice{}, false
	}
	n.Notice.Text = n.text
	return n.Notice, true
}

// noticeEvent tells whether ev is a notice event and makes its push.
func noticeEvent(ev chat.Event) (notice, bool) {
	if ev.Type != chat.TypeNotice {
		return notice{}, false
	}
	var p chat.Notice
	if json.Unmarshal(ev.Payload, &p) != nil || p.Text == "" {
		return notice{}, false
	}
	text := p.Text
	if r := []rune(text); len(r) > MaxNoticeText {
		text = string(r[:MaxNoticeText-1]) + "…"
	}
	return notice{kind: store.PushNotice, Notice: Notice{Seq: ev.Seq, TS: ev.TS, Code: p.Level}, text: text}, true
}

// optIns are the devices that turned an optional push on, by device; nil
// when none did.
func (s *Service) optIns(ctx context.Context) (map[string]store.PushPrefs, error) {
	prefs, err := s.opt.Store.PushPrefs(ctx)
	if err != nil {
		return nil, fmt.Errorf("push: prefs: %w", err)
	}
	var on map[string]store.PushPrefs
	for _, p := range prefs {
		if !p.Turns.IsZero() || !p.Errors.IsZero() || !p.Notices.IsZero() {
			if on == nil {
				on = map[string]store.PushPrefs{}
			}
			on[p.Device] = p
		}
	}
	return on, nil
}

// reconcileOptional writes to the outbox a push per finished turn and per
// error in a thread's recent log, for each subscription of a device that
// turned that push on before it happened (and subscribed before). Keyed by the
// event's seq, like a card's pushes by its request id: once each.
func (s *Service) reconcileOptional(ctx context.Context, id chat.ThreadID) error {
	on, err := s.optIns(ctx)
	if err != nil || len(on) == 0 {
		return err
	}
	evs, err := s.opt.Store.Tail(ctx, id, tailScan)
	if err != nil {
		return fmt.Errorf("push: log of %s: %w", id, err)
	}
	var ns []notice
	for _, ev := range evs {
		if kind, n, ok := NoticeOf(ev); ok {
			ns = append(ns, notice{kind: kind, Notice: n})
		} else if n, ok := noticeEvent(ev); ok {
			ns = append(ns, n)
		}
	}
	return s.enqueueNotices(ctx, id, func() (chat.Thread, error) { return s.opt.Store.Thread(ctx, id) }, ns, on, time.Time{})
}

// enqueueNotices writes the pushes a thread's notices call for: one per
// notice and subscription of a device that turned its kind on before it
// happened (and subscribed before), none for a notice before notBefore.
// thread is read only when one is due.
func (s *Service) enqueueNotices(ctx context.Context, id chat.ThreadID, thread func() (chat.Thread, error),
	ns []notice, on map[string]store.PushPrefs, notBefore time.Time) error {
	if len(on) == 0 {
		return nil
	}
	var th *chat.Thread
	var subs []store.PushSubscription
	var items []store.PushItem
	now := s.opt.Clock.Now()
	for _, n := range ns {
		body := noticeWords(n.kind, n.Code)
		if n.kind == store.PushNotice {
			body = n.text
		}
		if body == "" || n.TS.Before(notBefore) {
			continue
		}
		if th == nil {
			t, err := thread()
			if errors.Is(err, chat.ErrNotFound) {
				return nil // deleted meanwhile: nothing to push of it
			}
			if err != nil {
				return fmt.Errorf("push: thread %s: %w", id, err)
			}
			th = &t
			if subs, err = s.opt.Store.PushSubscriptions(ctx); err != nil {
				return fmt.Errorf("push: subscriptions: %w", err)
			}
		}
		payload := s.optionalPayload(*th, n.kind, body)
		for _, sub := range subs {
			p, ok := on[sub.Device]
			since := p.Turns
			switch n.kind {
			case store.PushError:
				since = p.Errors
			case store.PushNotice:
				since = p.Notices
			}
			if !ok || since.IsZero() || n.TS.Before(since) || n.TS.Before(sub.Created) {
				continue
			}
			if s.opt.Live != nil && !s.opt.Live(sub.Device) {
				continue // dropped with its device by the sender
			}
			state := store.PushPending
			if s.opt.OnScreen != nil && s.opt.OnScreen(sub.Device, id) {
				state = store.PushSkipped
			}
			items = append(items, store.PushItem{Endpoint: sub.Endpoint, Thread: id, RequestID: "seq:" + strconv.FormatInt(n.Seq, 10),
				Kind: n.kind, Payload: payload, State: state, NextAt: now})
		}
	}
	if _, err := s.opt.Store.PushEnqueue(ctx, items); err != nil {
		return fmt.Errorf("push: outbox of %s: %w", id, err)
	}
	return nil
}

// ThreadTag is the notification tag of a thread's optional pushes: a newer
// one replaces the older.
func ThreadTag(thread chat.ThreadID) string { return "parley-thread:" + string(thread) }

func (s *Service) optionalPayload(th chat.Thread, kind, body string) []byte {
	b, _ := json.Marshal(Message{Kind: kind, Title: s.title(th), Body: body, Tag: ThreadTag(th.ID),
		URL: threadURL(th.ID, ""), Thread: string(th.ID)})
	return b
}
