// Package follow shows a route's thread to one client: the thread, its log
// after since (or its tail), its open cards restated, whether a turn runs, then
// its live events, each exactly once and in seq order. It moves with the route
// when the route is attached to another thread, and catches up from the log
// when the hub drops it for falling behind. Every surface that shows a thread
// (the chat socket, the ACP agent side and through it the IM plugins) follows
// it through this package; docs/protocol.md describes what a client sees.
package follow

import (
	"context"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/fanout"
)

// Source is where a thread's record, log and open cards are read. The local
// store satisfies it; a thread owned by another machine (docs/architecture.md,
// "Following a thread") is a second Source answering from that machine's log,
// its live events published into the local hub by the link that receives them.
type Source interface {
	// Thread returns one thread, or chat.ErrNotFound.
	Thread(ctx context.Context, id chat.ThreadID) (chat.Thread, error)
	// Events returns up to limit events with seq > since, in seq order.
	Events(ctx context.Context, id chat.ThreadID, since int64, limit int) ([]chat.Event, error)
	// Tail returns the last n events, in seq order.
	Tail(ctx context.Context, id chat.ThreadID, n int) ([]chat.Event, error)
	// Cards returns the thread's cards in a state, oldest first.
	Cards(ctx context.Context, id chat.ThreadID, state string) ([]chat.Card, error)
}

// AsideSource is a Source that also holds events of a thread outside its
// log, with no seq: a cluster's hub keeps the messages for a node's thread
// that failed before the node took them (docs/multi-machine.md). The
// follower shows them among the replay, by time, and live as they come
// (hub.PublishAside).
type AsideSource interface {
	Asides(ctx context.Context, id chat.ThreadID) ([]chat.Event, error)
}

// Subscriber registers a route on the hub and says which thread it shows, the
// two read together (the router does this on its own goroutine).
type Subscriber interface {
	Subscribe(ctx context.Context, route chat.RouteKey, buffer int) (*fanout.Sub, *chat.Thread, error)
}

// Hub ends a subscription and says why the hub dropped one.
type Hub interface {
	Unsubscribe(s *fanout.Sub)
	Reason(s *fanout.Sub) string
}

// Deps are the parts a follower reads from.
type Deps struct {
	Source Source
	Router Subscriber
	Hub    Hub
}

// Options say how a route is followed.
type Options struct {
	// Buffer bounds how far the subscription may fall behind (limits.conn_buffer).
	Buffer int
	// Tail is how many events a thread shown without since replays; 0 replays
	// none (only the open cards are restated).
	Tail int
	// Since, when set, is asked where to start a thread shown without since (a
	// switch, or a connect that named none): a seq to replay from, or < 0 for
	// the tail. The ACP side answers with where this route's client was.
	Since func(th chat.Thread) int64
	// DraftAppends: the client takes a draft that only adds to the one
	// before it as that addition (chat.AgentDraft.Extends), not whole.
	DraftAppends bool
}

// Kind says what an Item is.
type Kind uint8

// Kinds of item, in the order a thread is shown: Thread, Pruned (when events
// were pruned), the replayed Events, the restated Cards, Turn, CaughtUp, then
// live Events until the next Thread.
const (
	KindThread   Kind = iota + 1 // the route shows Thread; what follows belongs to it
	KindPruned                   // history_pruned: events asked for are gone
	KindEvent                    // a log event, replayed (Replay) or live
	KindCard                     // an open card restated (Event.Restated): no log entry
	KindTurn                     // turn_status: whether a turn runs now
	KindCaughtUp                 // replay_done: live events follow
	KindDraft                    // agent_draft: provisional text, live only, no log entry
)

// Item is one thing to show. Event is typed and Frame is its wire frame, both
// built once: a socket writes Frame, the ACP side reads Event.
type Item struct {
	Kind   Kind
	Thread chat.Thread // KindThread
	Event  chat.Event
	Frame  []byte
	// Replay marks a KindEvent of the history shown (after since, or the
	// tail), as opposed to one that happened while the client followed: live,
	// or missed while the hub had dropped the follower and caught up by Renew.
	Replay bool
}

// Emit hands one item to the client; an error ends the follow.
type Emit func(Item) error

// Follower follows one route for one client. It is not safe for concurrent
// use: its owner (a socket's writer, a session's pump) calls it.
type Follower struct {
	d     Deps
	opt   Options
	route chat.RouteKey
	sub   *fanout.Sub

	thread  chat.ThreadID // the thread shown
	lastSeq int64         // the newest seq of thread handed on
	// lastDraft is the ID of the draft handed on last (0: none since the
	// thread was shown): an append is handed on only onto it.
	lastDraft int64
	// asides are the shown thread's events outside its log (AsideSource)
	// not handed on yet by the replay under way, oldest first.
	asides []chat.Event
	// since and sinceThread are where the client asked to start when Start
	// had no thread to show (the route had none, or its machine did not
	// answer): that thread, once shown, starts there.
	since       int64
	sinceThread chat.ThreadID
}

// Subscribe subscribes route and returns its follower and the thread the route
// shows now (nil when none yet). Nothing is shown until Start.
func Subscribe(ctx context.Context, d Deps, route chat.RouteKey, opt Options) (*Follower, *chat.Thread, error) {
	sub, th, err := d.Router.Subscribe(ctx, route, opt.Buffer)
	if err != nil {
		return nil, nil, err
	}
	return &Follower{d: d, opt: opt, route: route, sub: sub}, th, nil
}

// Sub is the live subscription: wait on Ready, see a drop on Done, set a wake
// or a drop callback.
func (f *Follower) Sub() *fanout.Sub { return f.sub }

// Thread is the thread shown ("" before any).
func (f *Follower) Thread() chat.ThreadID { return f.thread }

// LastSeq is the newest seq of Thread handed on.
func (f *Follower) LastSeq() int64 { return f.lastSeq }

// Dropped says why the hub dropped the subscription ("" while live).
func (f *Follower) Dropped() string { return f.d.Hub.Reason(f.sub) }

// Close ends the subscription.
func (f *Follower) Close() { f.d.Hub.Unsubscribe(f.sub) }

// Start shows th (the thread Subscribe returned) from since, or its tail when
// since < 0 or sinceThread names another thread. A route with no thread yet
// (or whose thread's machine did not answer) gets an idle Turn and CaughtUp;
// its thread comes as a switch, from since when it is sinceThread.
func (f *Follower) Start(ctx context.Context, th *chat.Thread, since int64, sinceThread chat.ThreadID, emit Emit) error {
	if th == nil {
		f.since, f.sinceThread = since, sinceThread
		if err := f.emit(emit, KindTurn, chat.TurnStatus{}); err != nil {
			return err
		}
		return f.emit(emit, KindCaughtUp, chat.ReplayDone{})
	}
	if sinceThread != "" && sinceThread != th.ID {
		since = -1 // the client's seq belongs to another thread
	}
	return f.Show(ctx, th.ID, since, emit)
}

// Show makes the follower show thread id: the thread, its log after since (its
// tail when since < 0), its open cards restated, whether a turn runs, then
// CaughtUp. Live events already queued are deduplicated against the replay.
func (f *Follower) Show(ctx context.Context, id chat.ThreadID, since int64, emit Emit) error {
	th, err := f.d.Source.Thread(ctx, id)
	if err != nil {
		return err
	}
	f.thread, f.lastSeq, f.lastDraft, f.asides = id, 0, 0, nil
	tev := mustEvent(chat.ThreadEvent{Thread: th})
	if err := emit(Item{Kind: KindThread, Thread: th, Event: tev, Frame: tev.Frame()}); err != nil {
		return err
	}
	if since < 0 && f.opt.Since != nil {
		since = f.opt.Since(th)
	}
	if since < 0 {
		since = th.LastSeq
		if f.opt.Tail > 0 {
			tail, err := f.d.Source.Tail(ctx, id, f.opt.Tail)
			if err != nil {
				return err
			}
			since = 0 // an empty tail: nothing kept, and Pruned says so
			if len(tail) > 0 {
				since = tail[0].Seq - 1
			}
		}
	}
	if as, ok := f.d.Source.(AsideSource); ok {
		if f.asides, err = as.Asides(ctx, id); err != nil {
			return err
		}
	}
	if err := f.replay(ctx, since, th.LastSeq, true, emit); err != nil {
		return err
	}
	if err := f.emitAsides(time.Time{}, emit); err != nil {
		return err
	}
	done := chat.ReplayDone{}
	if c := th.Copy; c != nil { // read from a hub's copy: its machine is away
		done.FromCopy, done.OfflineSince = true, c.OfflineSince
	}
	open, err := f.d.Source.Cards(ctx, id, chat.CardOpen)
	if err != nil {
		return err
	}
	for _, c := range open {
		ev := RestatedCard(c)
		if err := emit(Item{Kind: KindCard, Event: ev, Frame: ev.Frame()}); err != nil {
			return err
		}
	}
	if th, err = f.d.Source.Thread(ctx, id); err != nil {
		return err
	}
	if err := f.emit(emit, KindTurn, chat.TurnStatus{Active: th.TurnMessageID != "", MessageID: th.TurnMessageID}); err != nil {
		return err
	}
	done.LastSeq = f.lastSeq
	return f.emit(emit, KindCaughtUp, done)
}

// RestatedCard is an open card as it is sent again after a replay: its request
// event, marked restated, without a seq.
func RestatedCard(c chat.Card) chat.Event {
	ev := chat.Event{Type: chat.TypePermissionRequest, Thread: c.ThreadID, Payload: c.Request, Restated: true}
	if c.Kind == chat.CardQuestion {
		ev.Type = chat.TypeQuestion
	}
	return ev
}

// replay hands on the log after since, page by page, marked history or not.
// last is the thread's last_seq read before: when the first page starts later
// than asked, the events between were pruned, and a Pruned item says so rather
// than leave a silent gap.
func (f *Follower) replay(ctx context.Context, since, last int64, history bool, emit Emit) error {
	const page = 1000
	f.lastSeq = since
	for first := true; ; first = false {
		evs, err := f.d.Source.Events(ctx, f.thread, f.lastSeq, page)
		if err != nil {
			return err
		}
		if through := PrunedThrough(f.lastSeq, last, evs); first && through > 0 {
			if err := f.emit(emit, KindPruned, chat.HistoryPruned{ThroughSeq: through}); err != nil {
				return err
			}
			f.lastSeq = through
		}
		for _, ev := range evs {
			if err := f.emitAsides(ev.TS, emit); err != nil {
				return err
			}
			if err := emit(Item{Kind: KindEvent, Event: ev, Frame: ev.Frame(), Replay: history}); err != nil {
				return err
			}
			f.lastSeq = ev.Seq
		}
		if len(evs) < page {
			return nil
		}
	}
}

// emitAsides hands on the thread's asides from before t (all of them when t
// is zero), as replayed history, each once.
func (f *Follower) emitAsides(t time.Time, emit Emit) error {
	for len(f.asides) > 0 && (t.IsZero() || f.asides[0].TS.Before(t)) {
		ev := f.asides[0]
		f.asides = f.asides[1:]
		if err := emit(Item{Kind: KindEvent, Event: ev, Frame: ev.Frame(), Replay: true}); err != nil {
			return err
		}
	}
	return nil
}

// PrunedThrough returns the last seq a reader asking for the events after since
// will not get because they were pruned (0 when none is missing). last is the
// thread's last_seq read before evs, the first page of the answer: seqs have no
// holes but what pruning made, always a prefix of the log.
func PrunedThrough(since, last int64, evs []chat.Event) int64 {
	switch {
	case len(evs) > 0 && evs[0].Seq > since+1:
		return evs[0].Seq - 1
	case len(evs) == 0 && last > since:
		return last
	}
	return 0
}

// Live hands on what the hub has queued: the shown thread's events not handed
// on yet, and on a switch the new thread shown from its tail. It returns how
// many items it took (0: nothing was waiting).
func (f *Follower) Live(ctx context.Context, emit Emit) (int, error) {
	items := f.sub.Take()
	for _, it := range items {
		if it.Switch {
			if it.Thread == f.thread {
				continue // shown already (hub.Reshow)
			}
			since := int64(-1)
			if f.thread == "" && it.Thread == f.sinceThread {
				since = f.since // the thread the client asked for at Start
			}
			if err := f.Show(ctx, it.Thread, since, emit); err != nil {
				return len(items), err
			}
			continue
		}
		if it.Draft {
			// Provisional text belongs right after its event: a client that
			// has been handed a later one (a replay went past it) may already
			// have the final words it stood for.
			if it.Thread == f.thread && it.After == f.lastSeq {
				// Only what it adds, when the client has the one it adds to.
				d := it
				if a := it.Append; f.opt.DraftAppends && a != nil && a.Extends == f.lastDraft {
					d = a
				}
				if err := emit(Item{Kind: KindDraft, Event: d.Event, Frame: d.Frame}); err != nil {
					return len(items), err
				}
				f.lastDraft = it.DraftID
			}
			continue
		}
		if it.Aside {
			// Its sender's route may show no thread yet (its machine does
			// not answer): the receipt is the sender's all the same.
			if it.Thread == f.thread || f.thread == "" {
				if err := emit(Item{Kind: KindEvent, Event: it.Event, Frame: it.Frame}); err != nil {
					return len(items), err
				}
			}
			continue
		}
		if it.Thread != f.thread || it.Seq <= f.lastSeq {
			continue // already handed on in the replay, or another thread's
		}
		if err := emit(Item{Kind: KindEvent, Event: it.Event, Frame: it.Frame}); err != nil {
			return len(items), err
		}
		f.lastSeq = it.Seq
	}
	return len(items), nil
}

// Renew subscribes again after the hub dropped the follower for falling
// behind and catches up from the log, or shows the route's thread when it
// changed meanwhile. What it catches up happened while the client followed:
// it is not marked Replay (a turn that ended meanwhile answers its prompt). It fails with chat.ErrNotFound when
// the route has no thread any more. The router's call is not cut short by ctx:
// its answer must be read, or the subscription would leak.
func (f *Follower) Renew(ctx context.Context, emit Emit) error {
	sub, th, err := f.d.Router.Subscribe(context.WithoutCancel(ctx), f.route, f.opt.Buffer)
	if err != nil {
		return err
	}
	if th == nil || ctx.Err() != nil {
		f.d.Hub.Unsubscribe(sub)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return chat.ErrNotFound
	}
	f.sub, f.lastDraft = sub, 0 // drafts may have been missed: the next goes whole
	if th.ID != f.thread {
		return f.Show(ctx, th.ID, -1, emit)
	}
	return f.replay(ctx, f.lastSeq, th.LastSeq, false, emit)
}

func (f *Follower) emit(emit Emit, k Kind, p chat.Payload) error {
	ev := mustEvent(p)
	return emit(Item{Kind: k, Event: ev, Frame: ev.Frame()})
}

// mustEvent builds a connection-level event; parley's own payloads always
// encode.
func mustEvent(p chat.Payload) chat.Event {
	ev, err := chat.NewEvent("", p, time.Time{})
	if err != nil {
		panic("follow: " + err.Error())
	}
	return ev
}
