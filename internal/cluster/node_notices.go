package cluster

import (
	"cmp"
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

// maxSummaryNotices bounds the notice events a summary carries: the
// newest, so a burst between two summaries still reaches the hub (each is
// pushed once, by its seq); more than this many between two is rare.
const maxSummaryNotices = 8

// threadNotices are a thread's newest notices as the node last read them.
type threadNotices struct {
	turn, err *push.Notice
	notices   []push.Notice // its newest notice events, oldest first
	stale     bool          // a turn ended, an error or a notice came since: read again
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
		if x, ok := push.NoticeEvent(ev); ok {
			x.TS = x.TS.UTC()
			n.notices = addNotice(n.notices, x)
			continue
		}
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

// addNotice adds x to ns (oldest first) unless it is there, keeping the
// newest maxSummaryNotices.
func addNotice(ns []push.Notice, x push.Notice) []push.Notice {
	i, found := slices.BinarySearchFunc(ns, x.Seq, func(n push.Notice, seq int64) int { return cmp.Compare(n.Seq, seq) })
	if found {
		return ns
	}
	ns = slices.Insert(ns, i, x)
	if len(ns) > maxSummaryNotices {
		ns = slices.Delete(ns, 0, len(ns)-maxSummaryNotices)
	}
	return ns
}
