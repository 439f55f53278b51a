package sqlite

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/store"
)

// A push queued for an endpoint with no subscription (its device was revoked
// after the card's open push left, so only the closing push is new) is never
// due: the sender, which sleeps until PushNextDue, would otherwise wake at
// once forever for a push PushDue never returns.
func TestPushForAnEndpointWithoutSubscriptionIsNeverDue(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "p.db"))
	ctx := t.Context()
	if err := s.PushSubscribe(ctx, store.PushSubscription{Endpoint: "https://push.example/live", Device: "d1", P256dh: "k", Auth: "a"}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := s.PushEnqueue(ctx, []store.PushItem{
		{Endpoint: "https://push.example/gone", Thread: "T", RequestID: "r1", Kind: store.PushClose, Payload: []byte("{}"), State: store.PushPending, NextAt: now},
	}); err != nil {
		t.Fatal(err)
	}
	if due, err := s.PushDue(ctx, now.Add(time.Hour), 10); err != nil || len(due) != 0 {
		t.Fatalf("due %v %v", due, err)
	}
	if next, err := s.PushNextDue(ctx); err != nil || !next.IsZero() {
		t.Fatalf("the next push is due at %v (%v), but PushDue returns none: the sender spins", next, err)
	}
	// A push for the live endpoint is due as before.
	if _, err := s.PushEnqueue(ctx, []store.PushItem{
		{Endpoint: "https://push.example/live", Thread: "T", RequestID: "r1", Kind: store.PushOpen, Payload: []byte("{}"), State: store.PushPending, NextAt: now},
	}); err != nil {
		t.Fatal(err)
	}
	if next, err := s.PushNextDue(ctx); err != nil || !next.Equal(time.Unix(0, now.UnixNano())) {
		t.Fatalf("next %v %v", next, err)
	}
	if due, err := s.PushDue(ctx, now, 10); err != nil || len(due) != 1 {
		t.Fatalf("due %v %v", due, err)
	}
}
