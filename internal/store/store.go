// Package store is parley's persistence: threads, routes, each thread's event log,
// cards and inputs not yet delivered. The interface is what a PostgreSQL store will
// share with the SQLite one (package store/sqlite), so its SQL stays portable.
package store

import (
	"context"
	"errors"
	"time"

	"github.com/parleyhq/parley/internal/chat"
)

// RouteAsk is a route's ask for a new thread on another machine (on a
// cluster's hub, "agent@node"): the route's next message starts it there,
// with that agent and directory. AskID names it to that machine, which makes
// one thread per ask id (Batch.Ask), however often it is asked.
type RouteAsk struct {
	Key              chat.RouteKey
	Agent, Cwd, Node string
	AskID            string
}

// FailedRemote is a message for a thread another machine owns (on a
// cluster's hub) that failed before that machine took it: its log never
// held it, so the hub keeps it, and the thread still shows it failed with
// the reason after a reload, and search finds it.
type FailedRemote struct {
	Thread    chat.ThreadID // the hub's id of the thread, <thread>@<node>
	From      chat.RouteKey
	MessageID string
	Text      string
	Reason    string
	At        time.Time
	// State is chat.DeliveryFailed ("" reads as it), or chat.DeliveryUnknown
	// when the hub handed it over and its machine may have applied it.
	State string
}

// Store is safe for concurrent use. Each thread's lane is the only writer of that
// thread's rows, so Commit never races with itself for one thread.
type Store interface {
	// Commit writes a batch in one transaction: all of it or nothing.
	Commit(ctx context.Context, b Batch) error

	// Thread returns one thread, or chat.ErrNotFound.
	Thread(ctx context.Context, id chat.ThreadID) (chat.Thread, error)
	// Threads returns every thread, newest activity first.
	Threads(ctx context.Context) ([]chat.Thread, error)

	// Route returns a route's attachment, or chat.ErrNotFound.
	Route(ctx context.Context, key chat.RouteKey) (chat.Route, error)
	// AttachRoute attaches a route to a thread (creating the route if new).
	AttachRoute(ctx context.Context, key chat.RouteKey, thread chat.ThreadID) error
	// AttachRemoteRoute attaches a route to a thread another machine owns (a
	// cluster's hub): no such thread is in this store, so none is checked.
	// Route and Routes return it as any route.
	AttachRemoteRoute(ctx context.Context, key chat.RouteKey, thread chat.ThreadID) error
	// DetachRemoteRoutes removes every route attached to a thread another
	// machine owns (it was deleted there).
	DetachRemoteRoutes(ctx context.Context, thread chat.ThreadID) error
	// Routes returns every route.
	Routes(ctx context.Context) ([]chat.Route, error)

	// SetRouteAsk keeps a route's ask for a new thread on another machine
	// (a cluster's hub), replacing one it had. Attaching the route to a
	// thread (AttachRoute, AttachRemoteRoute) drops it in the same
	// transaction; DropRouteAsk drops it (none is no error).
	SetRouteAsk(ctx context.Context, ask RouteAsk) error
	DropRouteAsk(ctx context.Context, key chat.RouteKey) error
	// RouteAsks returns every route's ask.
	RouteAsks(ctx context.Context) ([]RouteAsk, error)
	// AskThread returns the thread made for an ask id (Batch.Ask), or
	// chat.ErrNotFound when none was, or it was deleted since.
	AskThread(ctx context.Context, askID string) (chat.ThreadID, error)

	// PutFailedRemote keeps a message for another machine's thread that
	// failed before it reached it (a cluster's hub), in place of the
	// route's earlier record of that message id. Search finds its text
	// (kind "user", seq 0: it is in no log).
	PutFailedRemote(ctx context.Context, f FailedRemote) error
	// FailedRemotes returns a thread's failed messages, oldest first.
	FailedRemotes(ctx context.Context, thread chat.ThreadID) ([]FailedRemote, error)
	// DropFailedRemote forgets the route's failed message (it was sent
	// again); none is no error.
	DropFailedRemote(ctx context.Context, from chat.RouteKey, messageID string) error
	// DropFailedRemotes forgets every failed message of a thread (deleted on
	// its machine), with their search rows.
	DropFailedRemotes(ctx context.Context, thread chat.ThreadID) error

	// Events returns up to limit events of a thread with seq > since, in seq order.
	// limit <= 0 means no limit.
	Events(ctx context.Context, thread chat.ThreadID, since int64, limit int) ([]chat.Event, error)
	// Usage sums a thread's usage events still in its log (one per turn).
	Usage(ctx context.Context, thread chat.ThreadID) (chat.UsageTotals, error)

	// Tail returns the last n events of a thread, in seq order.
	Tail(ctx context.Context, thread chat.ThreadID, n int) ([]chat.Event, error)

	// PruneEvents deletes old events (limits.retain_events). For each thread that
	// is not working (no turn in flight, no queued or delivering input, no open
	// card) it deletes the events up to the last one stamped before before, so
	// what is pruned is always a prefix of the log. Seqs are never reused: the
	// thread's last_seq stays, and Events after a pruned seq starts at the first
	// kept one (a reader sees the gap: docs/protocol.md, "Retention"). It returns
	// how many events it deleted.
	PruneEvents(ctx context.Context, before time.Time) (int64, error)

	// Cards returns a thread's cards in the given state ("" for all), oldest first.
	Cards(ctx context.Context, thread chat.ThreadID, state string) ([]chat.Card, error)

	// Input returns the input a route sent with a message id, or
	// chat.ErrNotFound: message ids are unique per route, not across routes.
	Input(ctx context.Context, from chat.RouteKey, messageID string) (chat.Input, error)
	// PendingInputs returns every queued or delivering input, in acceptance order.
	PendingInputs(ctx context.Context) ([]chat.Input, error)

	// Search finds threads by title and message text, best match first, at
	// most limit hits (<= 0 or above MaxSearchResults: MaxSearchResults).
	// Words match as prefixes, "quoted words" as a phrase, all of them must
	// match; a search with no word is refused with chat.ErrBadInput. The
	// index trails the log (an indexer works after each commit); a search
	// first waits until what was committed before it is indexed.
	Search(ctx context.Context, query string, limit int) ([]chat.SearchHit, error)
	// DeleteThread deletes a thread with its log, cards, inputs, routes,
	// search rows and finished pushes, in one transaction; an unknown one is
	// chat.ErrNotFound. A card's push that was sent keeps its outbox row (and
	// a pending closing push stays): the push service still sends the closing
	// push that takes the notification off the phone.
	// The thread's lane must be gone first (it is the thread's writer).
	DeleteThread(ctx context.Context, id chat.ThreadID) error

	// Attachments returns every thread's attachment (Batch.Attach).
	Attachments(ctx context.Context) ([]Attachment, error)

	Close() error
}

// MaxSearchResults caps the hits of one search.
const MaxSearchResults = 50

// Batch is what one lane step changes. Events carry the seq the lane assigned
// (the lane is the thread's only writer); the store rejects a seq already used.
type Batch struct {
	Thread *chat.Thread // inserted or updated when set
	Events []chat.Event
	Cards  []chat.Card  // inserted or updated, keyed by (thread, request id)
	Inputs []chat.Input // inserted or updated, keyed by (route, message id)
	// Ask, with a new Thread, is the id of the ask (another machine's, a
	// cluster hub's "agent@node") the thread is made for: kept with it,
	// so the same ask asked again finds it (AskThread). An ask id names
	// one thread.
	Ask string
	// Attach, when set, is the process the thread follows now (replacing
	// the one it followed), or, its Kind empty, that it follows none.
	Attach *Attachment
}

// ErrUnavailable marks a write the store could not make now and may make
// when tried again (its disk full, its file refused to grow, a lock held
// too long): a caller keeps what it wrote and tries again. Other errors
// will fail the same way however often they are tried.
var ErrUnavailable = errors.New("the store cannot write now")

// Empty reports whether the batch writes nothing.
func (b Batch) Empty() bool {
	return b.Thread == nil && len(b.Events) == 0 && len(b.Cards) == 0 && len(b.Inputs) == 0 && b.Ask == "" && b.Attach == nil
}
