package sessions

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// fakeRemote is a cluster with nodes whose answers a test holds back.
type fakeRemote struct {
	mu     sync.Mutex
	online map[string]bool
	lists  map[string][]Session
	hold   chan struct{} // while set, NodeSessions waits for it to close
	asked  int
}

func (r *fakeRemote) Nodes(context.Context) ([]RemoteNode, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []RemoteNode
	for n, on := range r.online {
		out = append(out, RemoteNode{Name: n, Online: on})
	}
	return out, nil
}

func (r *fakeRemote) NodeSessions(ctx context.Context, node string, _ Filter) ([]Session, error) {
	r.mu.Lock()
	hold := r.hold
	r.asked++
	r.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lists[node] == nil {
		return nil, errors.New("no answer")
	}
	return r.lists[node], nil
}

// A node that answered once is not waited for: its last answer stands in at
// once, with its time, while it is asked again in the background; the next
// listing has the new answer. A node that is away shows its last answer,
// stale.
func TestHubKeepsEachNodesLastAnswer(t *testing.T) {
	x, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	old := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := &fakeRemote{online: map[string]bool{"b": true, "c": true}, lists: map[string][]Session{
		"b": {{ID: "b1", UpdatedAt: old}}, "c": {{ID: "c1", UpdatedAt: old}},
	}}
	h := NewHub(x, r, "hub")
	defer h.Close()
	h.Quiet = 0             // every listing asks again
	h.FreshWait = time.Hour // a kept answer is never waited for: a listing that waits never ends
	ctx := context.Background()
	l, err := h.Listing(ctx, Filter{})
	if err != nil || len(l.Sessions) != 2 {
		t.Fatalf("first listing: %+v %v", l, err)
	}
	first := map[string]time.Time{}
	for _, m := range l.Machines {
		first[m.Node] = m.ListedAt
	}

	hold := make(chan struct{})
	r.mu.Lock()
	r.hold, r.lists["b"] = hold, []Session{{ID: "b1", UpdatedAt: old}, {ID: "b2", UpdatedAt: old.Add(time.Hour)}}
	r.mu.Unlock()
	l, err = h.Listing(ctx, Filter{})
	if err != nil || len(l.Sessions) != 2 {
		t.Fatalf("with the nodes slow: %+v %v, want their last answers", l, err)
	}
	for _, m := range l.Machines {
		if m.Node != "hub" && (m.Stale || !m.ListedAt.Equal(first[m.Node])) {
			t.Errorf("with the nodes slow, machine %+v (first listed %v)", m, first[m.Node])
		}
	}

	close(hold) // the answers in flight arrive
	r.mu.Lock()
	r.hold = nil
	r.online["c"] = false
	r.mu.Unlock()
	h.FreshFor = 0 // now every kept answer is old: wait for b's
	h.FreshWait = time.Minute
	l, err = h.Listing(ctx, Filter{})
	if err != nil || len(l.Sessions) != 3 || l.Sessions[0].ID != "b2" || l.Sessions[0].Node != "" {
		t.Fatalf("after b answered, c away: %+v %v", l, err)
	}
	for _, m := range l.Machines {
		if m.Stale != (m.Node == "c") {
			t.Errorf("c away: machine %+v", m)
		}
		if m.Node == "b" && !m.ListedAt.After(first["b"]) {
			t.Errorf("b's new answer listed at %v, its first at %v", m.ListedAt, first["b"])
		}
	}
	if _, err := h.Listing(ctx, Filter{Machine: "z"}); !errors.Is(err, ErrNoMachine) {
		t.Errorf("machine z: %v", err)
	}
}

// A node that has just answered is not asked again: listings close together
// (a dashboard's, the CLI's) ask it once.
func TestHubAsksANodeOnceInQuiet(t *testing.T) {
	x, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	r := &fakeRemote{online: map[string]bool{"b": true}, lists: map[string][]Session{"b": {{ID: "b1"}}}}
	h := NewHub(x, r, "hub")
	defer h.Close()
	h.Quiet = time.Hour
	for range 3 {
		if l, err := h.Listing(context.Background(), Filter{}); err != nil || len(l.Sessions) != 1 {
			t.Fatalf("listing: %+v %v", l, err)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.asked != 1 {
		t.Errorf("node asked %d times in 3 listings, want once", r.asked)
	}
}
