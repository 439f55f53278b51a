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
// kept: a listing answers a copy younger than FreshFor at once (its
// listed_at says when it was listed) and asks the node again in the
// background, for the next listing; an older copy is waited for FreshWait at
// most, a node never heard from FirstWait; a node that is away shows its
// last answer, stale.
type Hub struct {
	local  *Index
	remote Remote
	self   string // the hub's own machine name
	// FreshFor is how old a node's kept answer may be to be answered without
	// waiting for the node.
	FreshFor time.Duration
	// FreshWait is how long a listing waits for a node whose kept answer is
	// older than FreshFor.
	FreshWait time.Duration
	// FirstWait bounds the wait for a node never heard from.
	FirstWait time.Duration
	// Quiet is how soon after a node's answer it is not asked again (a
	// dashboard's listings and the CLI's together ask once).
	Quiet time.Duration

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
	return &Hub{local: local, remote: remote, self: self,
		FreshFor: time.Minute, FreshWait: 200 * time.Millisecond, FirstWait: 5 * time.Second, Quiet: 2 * time.Second,
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
	type pending struct {
		node string
		e    *nodeList
		done chan struct{}
		wait time.Duration
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
		// What to wait for: nothing for a young answer kept (the node is
		// asked again for the next listing, unless it just answered), a
		// short while for an old one, longer for none.
		var done chan struct{}
		wait := h.FirstWait
		if !e.at.IsZero() {
			wait = h.FreshWait
			if age := time.Since(e.at); age < h.FreshFor {
				wait = 0
			}
		}
		if n.Online && (e.at.IsZero() || e.err != nil || time.Since(e.at) >= h.Quiet) {
			done = h.refreshLocked(key, e)
		} else if n.Online {
			done = e.done // one in flight still counts
		}
		h.mu.Unlock()
		asked = append(asked, pending{n.Name, e, done, wait})
	}
	// The nodes list theirs while the hub lists its own.
	start := time.Now()
	out := Listing{Sessions: []Session{}}
	if f.Machine == "" || f.Machine == h.self {
		own, err := h.local.List(ctx, Filter{Agent: f.Agent, All: f.All})
		if err != nil {
			return Listing{}, err
		}
		out.Sessions = append(out.Sessions, own...)
		out.Machines = append(out.Machines, Machine{Node: h.self, ListedAt: time.Now()})
	}
	for _, p := range asked {
		if p.done == nil || p.wait <= 0 {
			continue
		}
		t := time.NewTimer(max(0, p.wait-time.Since(start)))
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
