package store

import (
	"context"
	"time"

	"github.com/parleyhq/parley/internal/chat"
)

// UsageRow is one turn's usage as an agent reported it (a usage event),
// with what the Usage view groups it by.
type UsageRow struct {
	Thread chat.ThreadID
	Agent  string
	Node   string    // the thread's machine at a cluster's hub; "" for this one
	At     time.Time // when it was reported; zero when only a total is known (a node's thread at the hub)
	Usage  chat.Usage
	// Turns is how many turns a total row sums (a node's thread at the hub);
	// 0 for one event.
	Turns int64
}

// UsageLister lists usage across threads (GET /api/usage). The SQLite store
// implements it; a cluster's hub adds its nodes' threads.
type UsageLister interface {
	// UsageSince lists every usage event reported at or after since, of
	// every thread still in the store (a stopped turn's too: the agent
	// reports its cost when it ends).
	UsageSince(ctx context.Context, since time.Time) ([]UsageRow, error)
}
