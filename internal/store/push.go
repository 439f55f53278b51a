package store

import (
	"context"
	"time"

	"github.com/parleyhq/parley/internal/chat"
)

// PushSubscription is a browser's Web Push subscription, tied to a device.
type PushSubscription struct {
	Endpoint string
	Device   string
	P256dh   string // the browser's ECDH public key, URL-safe base64
	Auth     string // its auth secret, URL-safe base64
	Created  time.Time
}

// PushPrefs are a device's optional pushes: each is when it was turned on,
// zero while off. Only what happens after it was turned on is pushed.
type PushPrefs struct {
	Device string
	Turns  time.Time // a turn finished
	Errors time.Time // the agent or parley failed in a thread
	// Notices: a notice in a thread (an agent's notify_person, parley notify).
	Notices time.Time
}

// PushPrefsChange turns a device's optional pushes on or off; a nil one stays
// as it is. One turned on gets At as its time, unless it was on already.
type PushPrefsChange struct {
	Device                 string
	Turns, Errors, Notices *bool
	At                     time.Time
}

// Push outbox kinds and states.
const (
	PushOpen  = "open"  // a card opened
	PushClose = "close" // the card was answered, or went
	PushTurn  = "turn"  // a turn finished (optional, per device)
	PushError = "error" // a thread's agent or parley failed (optional, per device)
	// PushNotice: a notice in a thread (optional, per device).
	PushNotice = "notice"

	PushPending = "pending"
	PushSent    = "sent"
	PushSkipped = "skipped" // the thread was on the device's screen, or the card closed first
	PushDropped = "dropped" // the endpoint is gone (404/410, or its device revoked)
	PushFailed  = "failed"  // retries spent
)

// PushItem is one push of the outbox: about one card, to one endpoint, once.
type PushItem struct {
	ID        int64
	Endpoint  string
	Thread    chat.ThreadID
	RequestID string
	Kind      string
	Payload   []byte // the JSON the service worker shows
	State     string
	Attempts  int
	NextAt    time.Time
	// Sub is the endpoint's subscription (filled by PushDue).
	Sub PushSubscription
}

// PushStore keeps the subscriptions and the push outbox. Enqueue is idempotent
// per (endpoint, thread, request id, kind): that key is what makes a push
// exactly once across reconnects, replays and restarts.
type PushStore interface {
	PushSubscribe(ctx context.Context, sub PushSubscription) error
	PushSubscriptions(ctx context.Context) ([]PushSubscription, error)
	// PushForget drops a device's subscriptions and preferences (every one
	// when endpoint is "") or one endpoint's, and marks their pending pushes
	// dropped.
	PushForget(ctx context.Context, device, endpoint string) error
	// PushEnqueue inserts the items whose key is new; it returns how many.
	PushEnqueue(ctx context.Context, items []PushItem) (int, error)
	// PushOpened lists a thread's open pushes that have no closing push yet.
	PushOpened(ctx context.Context, thread chat.ThreadID) ([]PushItem, error)
	// PushUnclosedThreads lists the threads that have open pushes without a
	// closing one (what a restart must look at again).
	PushUnclosedThreads(ctx context.Context) ([]chat.ThreadID, error)
	// PushDue lists pending pushes due at now, oldest first, with their subscriptions.
	PushDue(ctx context.Context, now time.Time, limit int) ([]PushItem, error)
	// PushNextDue is when the next pending push is due (zero when none is).
	PushNextDue(ctx context.Context) (time.Time, error)
	// PushMark sets a push's state, attempts and next try.
	PushMark(ctx context.Context, id int64, state string, attempts int, next time.Time) error
	// PushPrefs lists the devices' optional pushes (devices with none on may
	// be missing).
	PushPrefs(ctx context.Context) ([]PushPrefs, error)
	// PushSetPrefs turns a device's optional pushes on or off in one update:
	// the ones it leaves nil stay as they are, whatever another change did
	// meanwhile.
	PushSetPrefs(ctx context.Context, c PushPrefsChange) error
}
