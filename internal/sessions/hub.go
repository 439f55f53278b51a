package sessions

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Remote is a cluster's hub as the listing of every machine's sessions uses
// it (cluster.Hub, adapted by the daemon).
type Remote interface {
	// Nodes are the joined machines and whether each is online now.
	Nodes(ctx context.Context) ([]RemoteNode, error)
	// NodeSessions asks a node for its own sessions (Filter.Machine unset).
	NodeSessions(ctx context.Context, node string, f Filter) ([]Session, error)
}

// RemoteNode is a joined machine.
type RemoteNode struct {
	Name   string
	Online bool
}

// ErrNoMachine says a listing named a machine the cluster does not have.
var ErrNoMachine = errors.New("no such machine in this cluster")

// Hub lists every machine's sessions at a cluster's hub: its own from its
// Index, each node's by asking it, all at once. Each node's last answer is
// kept, so a listing waits at most FreshWait for nodes that already
// answered once (their last answer stands in, with its time, while the new
// one comes) and a node that is away shows its last answer, stale.
type Hub struct {
	local  *Index
	remote Remote
	self   string // the hub's own machine name
	// FreshWait is how long a listing waits for a node it has an answer of.
	FreshWait time.Duration
	// FirstWait bounds the wait for a node never heard from.
	FirstWait time.Duration

	ctx    context.Context // the refreshes' lifetime, ended by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	cache map[cacheKey]*nodeList
}

type cacheKey struct {
	node, agent string
	all         bool
}

// nodeList is one node's last answer for one filter, and the refresh in
// flight (done closed when it ends).
type nodeList struct {
	list []Session
	at   time.Time // when list was answered (zero: never)
	err  error     // the newest refresh's failure, nil once one succeeds
	done chan struct{}
}

// NewHub lists self's (the hub's) sessions from local and the nodes' through remote.
func NewHub(local *Index, remote Remote, self string) *Hub {
	ctx, cancel := context.WithCancel(context.Background())
	return &Hub{local: local, remote: remote, self: self, FreshWait: 200 * time.Millisecond, FirstWait: 5 * time.Second,
		ctx: ctx, cancel: cancel, cache: map[cacheKey]*nodeList{}}
}

// Close ends the refreshes in flight and waits for them.
func (h *Hub) Close() {
	h.cancel()
	h.wg.Wait()
}

// Listing lists every machine's sessions (f.Machine: one machine's), newest
// first, with each machine's freshness.
func (h *Hub) Listing(ctx context.Context, f Filter) (Listing, error) {
	nodes, err := h.remote.Nodes(ctx)
	if err != nil {
		return Listing{}, err
	}
	slices.SortFunc(nodes, func(a, b RemoteNode) int { return strings.Compare(a.Name, b.Name) })
	if f.Machine != "" && f.Machine != h.self && !slices.ContainsFunc(nodes, func(n RemoteNode) bool { return n.Name == f.Machine }) {
		return Listing{}, fmt.Errorf("%w: %q", ErrNoMachine, f.Machine)
	}
	out := Listing{Sessions: []Session{}}
	if f.Machine == "" || f.Machine == h.self {
		own, err := h.local.List(ctx, Filter{Agent: f.Agent, All: f.All})
		if err != nil {
			return Listing{}, err
		}
		out.Sessions = append(out.Sessions, own...)
		out.Machines = append(out.Machines, Machine{Node: h.self, ListedAt: time.Now()})
	}
	type pending struct {
		node string
		e    *nodeList
		done chan struct{}
	}
	var asked []pending
	for _, n := range nodes {
		if f.Machine != "" && f.Machine != n.Name {
			continue
		}
		key := cacheKey{node: n.Name, agent: f.Agent, all: f.All}
		h.mu.Lock()
		e := h.cache[key]
		if e == nil {
			e = &nodeList{}
			h.cache[key] = e
		}
		var done chan struct{}
		if n.Online {
			done = h.refreshLocked(key, e)
		}
		h.mu.Unlock()
		asked = append(asked, pending{n.Name, e, done})
	}
	// Wait for the nodes' answers: a node with an answer kept, FreshWait at
	// most; one without, FirstWait.
	start := time.Now()
	for _, p := range asked {
		if p.done == nil {
			continue
		}
		h.mu.Lock()
		heard := !p.e.at.IsZero()
		h.mu.Unlock()
		wait := h.FirstWait
		if heard {
			wait = h.FreshWait
		}
		t := time.NewTimer(max(0, wait-time.Since(start)))
		select {
		case <-p.done:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	online := map[string]bool{}
	for _, n := range nodes {
		online[n.Name] = n.Online
	}
	h.mu.Lock()
	for _, p := range asked {
		m := Machine{Node: p.node, ListedAt: p.e.at}
		switch {
		case !online[p.node]:
			m.Stale, m.Error = true, "the machine is away"
		case p.e.err != nil:
			m.Stale, m.Error = true, p.e.err.Error()
		case p.e.at.IsZero():
			m.Stale, m.Error = true, "the machine has not answered yet"
		}
		out.Machines = append(out.Machines, m)
		out.Sessions = append(out.Sessions, p.e.list...)
	}
	h.mu.Unlock()
	slices.SortStableFunc(out.Sessions, func(a, b Session) int { return b.UpdatedAt.Compare(a.UpdatedAt) })
	return out, nil
}

// refreshLocked asks a node again unless a refresh is in flight; it returns
// the channel closed when that refresh ends. h.mu is held.
func (h *Hub) refreshLocked(key cacheKey, e *nodeList) chan struct{} {
	if e.done != nil {
		return e.done
	}
	done := make(chan struct{})
	e.done = done
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		list, err := h.remote.NodeSessions(h.ctx, key.node, Filter{Agent: key.agent, All: key.all})
		h.mu.Lock()
		if err == nil {
			e.list, e.at, e.err = list, time.Now(), nil
		} else {
			e.err = err
		}
		e.done = nil
		h.mu.Unlock()
		close(done)
	}()
	return done
}
