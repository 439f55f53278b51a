package cluster

import (
	"context"
	"slices"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/push"
	"github.com/parleyhq/parley/internal/store"
)

// A node's thread summary carries the thread's newest finished turn and
// newest error that call for an optional push (push.NoticeOf chooses them,
// as the hub's own threads' are chosen): the hub pushes them to the phones
// that turned those pushes on. By seq, time and code, never the text of the
// answer or of the error: the summary leaves the machine. A node that was
// away tells only the newest of each when it is back, never what came
// between.

// noticeScan bounds how far back a thread's log is read for its notices, as
// the push service reads a local thread's: a turn's end is among its last
// events.
const noticeScan = 64

// threadNotices are a thread's newest notices as the node last read them.
type threadNotices struct {
	turn, err *push.Notice
	stale     bool // a turn ended or an error came since: read again
}

// changed takes the threads changed since the last call: every change, and
// the turns ended and errors (their notices marked to be read again).
func (l *Link) changed() []chat.ThreadID {
	ids := l.watch.Take()
	for _, id := range l.noticeWatch.Take() {
		if n := l.notices[id]; n != nil {
			n.stale = true
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// noticesOf is a thread's newest notices: kept from the last read unless a
// turn ended or an error came since, else read from the thread's tail (an
// older notice the tail no longer holds is kept).
func (l *Link) noticesOf(ctx context.Context, id chat.ThreadID) (threadNotices, error) {
	n := l.notices[id]
	if n != nil && !n.stale {
		return *n, nil
	}
	evs, err := l.opt.Store.Tail(ctx, id, noticeScan)
	if err != nil {
		return threadNotices{}, err
	}
	if n == nil {
		n = &threadNotices{}
	}
	n.stale = false
	for _, ev := range evs {
		kind, x, ok := push.NoticeOf(ev)
		if !ok {
			continue
		}
		x.TS = x.TS.UTC()
		switch {
		case kind == store.PushTurn && (n.turn == nil || x.Seq > n.turn.Seq):
			n.turn = &x
		case kind == store.PushError && (n.err == nil || x.Seq > n.err.Seq):
			n.err = &x
		}
	}
	l.notices[id] = n
	return *n, nil
}
