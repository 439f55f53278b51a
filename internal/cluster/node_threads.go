package cluster

import (
	"context"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/fanout"
	"github.com/parleyhq/parley/internal/follow"
)

// What a node tells its hub of its threads (docs/multi-machine.md):
//
//   - each committed event, live, on parley.from.<node>.t.<thread>.ev: the
//     payload as stored, its type, seq and time in headers (the hub builds
//     the frame once, as a local thread's is built);
//   - each thread's summary (parley.from.<node>.threads.sum.<thread>, which
//     carries its open cards and its newest finished turn and error by seq
//     and code, never their text: the hub's phones hear of them; and which
//     the hub writes into KV parley_threads under <node>.<thread>), sent
//     when it changes and all of them at every link-up; a thread deleted on
//     the node is said gone (parley.from.<node>.threads.gone.<thread>), and
//     after the summaries of a link-up the node names every thread it has
//     (parley.from.<node>.threads.all), so one deleted while the hub was
//     away leaves the hub's list too; all from one goroutine, and taken at
//     the hub in that order (hub_records.go);
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
	Search(ctx context.Context, query string, limit int) ([]chat.SearchHit, error)
	AskThread(ctx context.Context, askID string) (chat.ThreadID, error)
	Input(ctx context.Context, from chat.RouteKey, messageID string) (chat.Input, error)
}

// serveNode publishes the node's events and summaries and answers source
// requests; l.opt.Store and l.opt.Events are set.
func (l *Link) serveNode() error {
	l.opt.Events.SetTap(l.publishEvent)
	sub, err := l.nc.Subscribe(sourceSubject(l.opt.Node), l.answerSource)
	if err != nil {
		return err
	}
	l.srcSub = sub
	l.watch = l.opt.Events.Watch()
	l.noticeWatch = l.opt.Events.WatchTypes(chat.TypePromptDone, chat.TypeError, chat.TypeNotice)
	l.notices = map[chat.ThreadID]*threadNotices{}
	l.wg.Add(1)
	go l.summaries()
	return nil
}

// publishEvent runs on the publishing lane: it never waits (a link that is
// down buffers a little, then drops; a viewer at the hub backfills by seq).
func (l *Link) publishEvent(it fanout.Item) {
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
