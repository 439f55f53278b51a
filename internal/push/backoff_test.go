package push_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/fanout"
	"github.com/parleyhq/parley/internal/push"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/sqlite"
	"github.com/parleyhq/parley/internal/testkit/webpushsvc"
)

// fakeClock is a push.Clock the test moves on by hand. Each wait the sender
// asks for is told on asked, which is how the test knows the sender has done
// everything up to it.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	waits []fakeWait
	asked chan time.Time
}

type fakeWait struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC), asked: make(chan time.Time, 4096)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	at := c.now.Add(d)
	if d <= 0 {
		ch <- c.now
	} else {
		c.waits = append(c.waits, fakeWait{at, ch})
	}
	c.asked <- at
	return ch
}

// set moves the time on to t and wakes every wait due by then.
func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
	kept := c.waits[:0]
	for _, w := range c.waits {
		if w.at.After(t) {
			kept = append(kept, w)
			continue
		}
		w.ch <- t
	}
	c.waits = kept
}

// waitAsked returns once the sender asks to be woken at want (it may ask for
// other times first: passes before the push was due).
func (c *fakeClock) waitAsked(t *testing.T, want time.Time, what string) {
	t.Helper()
	var seen []time.Duration
	limit := time.After(10 * time.Second)
	for {
		select {
		case at := <-c.asked:
			if at.Equal(want) {
				return
			}
			seen = append(seen, at.Sub(c.Now()))
		case <-limit:
			t.Fatalf("%s: the sender never asked to be woken %v from now (it asked for %v)", what, want.Sub(c.Now()), seen)
		}
	}
}

// A push the service keeps refusing is tried again after 1 s, then a wait
// that doubles each time up to ten minutes, twelve tries in all; then it is
// given up (no longer due) and not tried again. The half hour of backoff
// passes on the fake clock. The subscription and the push are in the store
// before the sender starts, so nothing but the clock wakes it.
func TestAFailingPushBacksOffAndIsGivenUpAfterTwelveTries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "parley.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	keys, err := push.LoadOrCreateKeys(dir)
	if err != nil {
		t.Fatal(err)
	}
	svc := webpushsvc.Start(t)
	svc.ExpectKey(t, keys.Public)
	sub, js := svc.Subscribe(t)
	var ps struct {
		Endpoint string
		Keys     struct{ P256dh, Auth string }
	}
	if err := json.Unmarshal(js, &ps); err != nil {
		t.Fatal(err)
	}
	if err := st.PushSubscribe(ctx, store.PushSubscription{Endpoint: ps.Endpoint, Device: "dev", P256dh: ps.Keys.P256dh, Auth: ps.Keys.Auth}); err != nil {
		t.Fatal(err)
	}
	svc.SetStatus(sub, http.StatusInternalServerError)
	clock := newFakeClock()
	if _, err := st.PushEnqueue(ctx, []store.PushItem{{Endpoint: ps.Endpoint, Thread: "t1", RequestID: "r1",
		Kind: store.PushClose, Payload: []byte(`{"kind":"close"}`), State: store.PushPending, NextAt: clock.Now()}}); err != nil {
		t.Fatal(err)
	}
	h := fanout.New(nil)
	w := h.Watch()
	t.Cleanup(func() { h.Unwatch(w) })
	s, err := push.Start(push.Options{DataDir: dir, Store: st, Watch: w, Net: webpushsvc.Net(), Clock: clock,
		Logger: slog.New(slog.NewTextHandler(&testWriter{t: t}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)

	wants := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second,
		32 * time.Second, 64 * time.Second, 128 * time.Second, 256 * time.Second, 512 * time.Second, 10 * time.Minute}
	for i, wait := range wants {
		next := clock.Now().Add(wait)
		clock.waitAsked(t, next, fmt.Sprintf("after try %d", i+1))
		if n := svc.Attempts(sub); n != i+1 {
			t.Fatalf("the sender waits %v after %d tries, want after try %d", wait, n, i+1)
		}
		clock.set(next)
	}
	// The twelfth try fails: nothing is left to send, the sender waits its
	// idle hour, and past it tries nothing more.
	clock.waitAsked(t, clock.Now().Add(time.Hour), "after the last try")
	clock.set(clock.Now().Add(time.Hour))
	clock.waitAsked(t, clock.Now().Add(time.Hour), "an hour after the last try")
	if n := svc.Attempts(sub); n != 12 {
		t.Fatalf("the refused push was tried %d times, want 12", n)
	}
	if due, err := st.PushDue(ctx, clock.Now().Add(24*time.Hour), 10); err != nil || len(due) != 0 {
		t.Fatalf("still due after twelve tries: %+v %v, want given up", due, err)
	}
}
