package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/store"
)

// View is the hub's store as its readers see it (the web channel, the ACP
// side, the route follower): its own threads from its store, and every
// node's threads, each read from its node (RemoteSource) or listed from the
// directory. Writes go to the local store only: a remote thread is never
// written here.
type View struct {
	store.Store
	hub *Hub
	src *RemoteSource
}

// NewView wraps the hub's local store.
func NewView(local store.Store, h *Hub) *View { return &View{Store: local, hub: h, src: h.Source()} }

func remote(id chat.ThreadID) bool { _, _, ok := SplitRemoteID(id); return ok }

// Thread reads a local or a remote thread (an away node's from its summary
// and the hub's copy). A machine not joined (revoked, or never) is a
// *NotJoinedError that says how to join it again.
func (v *View) Thread(ctx context.Context, id chat.ThreadID) (chat.Thread, error) {
	if remote(id) {
		if err := v.hub.NotJoined(NodeOf(id)); err != nil {
			return chat.Thread{}, err
		}
		return v.src.Thread(ctx, id)
	}
	return v.Store.Thread(ctx, id)
}

// Threads lists the local threads, then every node's, newest first as the
// store lists its own.
func (v *View) Threads(ctx context.Context) ([]chat.Thread, error) {
	local, err := v.Store.Threads(ctx)
	if err != nil {
		return nil, err
	}
	rts, err := v.hub.Threads(ctx)
	if err != nil {
		return nil, err
	}
	for _, rt := range rts {
		th := rt.Thread
		th.Node = rt.Node
		local = append(local, th)
	}
	slices.SortStableFunc(local, func(a, b chat.Thread) int { return b.UpdatedAt.Compare(a.UpdatedAt) })
	return local, nil
}

// Events reads a local or a remote thread's log.
func (v *View) Events(ctx context.Context, id chat.ThreadID, since int64, limit int) ([]chat.Event, error) {
	if remote(id) {
		return v.src.Events(ctx, id, since, limit)
	}
	return v.Store.Events(ctx, id, since, limit)
}

// Tail reads a local or a remote thread's last events.
func (v *View) Tail(ctx context.Context, id chat.ThreadID, n int) ([]chat.Event, error) {
	if remote(id) {
		return v.src.Tail(ctx, id, n)
	}
	return v.Store.Tail(ctx, id, n)
}

// Asides are a node's thread's messages that failed at the hub before the
// node took them (kept in the hub's store: store.FailedRemote), each as
// its user_message and its failed delivery, with no seq: the follower shows
// them among the thread's log by time (follow.AsideSource).
func (v *View) Asides(ctx context.Context, id chat.ThreadID) ([]chat.Event, error) {
	if !remote(id) {
		return nil, nil
	}
	fs, err := v.Store.FailedRemotes(ctx, id)
	if err != nil {
		return nil, err
	}
	var out []chat.Event
	for _, f := range fs {
		out = append(out, FailedEvents(f)...)
	}
	return out, nil
}

// FailedEvents are a message for a node's thread that failed at the hub as
// the thread shows it: the message, then its failed receipt with the
// reason, at the time it failed; no seq (they are in no log).
func FailedEvents(f store.FailedRemote) []chat.Event {
	msg, _ := chat.NewEvent(f.Thread, chat.UserMessage{MessageID: f.MessageID, Text: f.Text, From: f.From}, f.At)
	state := f.State
	if state == "" {
		state = chat.DeliveryFailed
	}
	dl, _ := chat.NewEvent(f.Thread, chat.Delivery{MessageID: f.MessageID, State: state, Detail: f.Reason}, f.At)
	return []chat.Event{msg, dl}
}

// Cards reads a local or a remote thread's cards (none of an away node's).
func (v *View) Cards(ctx context.Context, id chat.ThreadID, state string) ([]chat.Card, error) {
	if remote(id) {
		return v.src.Cards(ctx, id, state)
	}
	return v.Store.Cards(ctx, id, state)
}

// NodeCards is what each online node's thread waits for, by remote id, as
// its node's summary in the directory last told: the hub's thread list reads
// it instead of asking each node (a node between its goodbye and its close
// drops a read, and a list that waited on it would hold every refresh). An
// offline node's threads wait for nobody: their cards cannot be answered.
func (v *View) NodeCards(ctx context.Context) (map[chat.ThreadID][]OpenCard, error) {
	nodes, err := v.hub.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	online := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		online[n.Name] = n.Online
	}
	rts, err := v.hub.Threads(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[chat.ThreadID][]OpenCard)
	for _, rt := range rts {
		if online[rt.Node] && len(rt.Cards) > 0 {
			out[rt.Thread.ID] = rt.Cards
		}
	}
	return out, nil
}

// Usage sums a local or a remote thread's usage.
func (v *View) Usage(ctx context.Context, id chat.ThreadID) (chat.UsageTotals, error) {
	if remote(id) {
		return v.src.Usage(ctx, id)
	}
	return v.Store.Usage(ctx, id)
}

// NodeOf names the machine of a remote thread id ("" for a local one).
func NodeOf(id chat.ThreadID) string {
	n, _, _ := SplitRemoteID(id)
	return n
}

// searchWait bounds how long a search at the hub waits for the nodes: one
// that has not answered by then is reported as not searched.
const searchWait = 5 * time.Second

// Unsearched is a machine a search at the hub did not cover, and why.
type Unsearched struct {
	Node   string `json:"node"`
	Reason string `json:"reason"`
}

// SearchAll searches the hub's own store and every joined node's, each node
// answering from its own store, all at once; a node that is offline, fails
// or does not answer within searchWait is listed in unsearched instead.
// The lists are merged taking each machine's next best in turn (FTS ranks of
// different stores do not compare), the hub's first, at most limit hits.
func (v *View) SearchAll(ctx context.Context, q string, limit int) (hits []chat.SearchHit, unsearched []Unsearched, err error) {
	if limit <= 0 || limit > store.MaxSearchResults {
		limit = store.MaxSearchResults
	}
	local, err := v.Store.Search(ctx, q, limit) // a query with no word fails here, before any node is asked
	if err != nil {
		return nil, nil, err
	}
	for i, h := range local {
		// A node's thread's message that failed here (FailedRemotes): its
		// title is its node's.
		if !remote(h.Thread) {
			continue
		}
		node, th, _ := SplitRemoteID(h.Thread)
		if rt, ok := v.hub.summaries.get(ThreadKey(node, th)); ok {
			local[i].Title, local[i].Archived = rt.val.Thread.Title, rt.val.Thread.Archived
		}
	}
	nodes, err := v.hub.Nodes(ctx)
	if err != nil {
		return nil, nil, err
	}
	lists := make([][]chat.SearchHit, len(nodes))
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	sctx, cancel := context.WithTimeout(ctx, searchWait)
	defer cancel()
	for i, n := range nodes {
		if !n.Online {
			errs[i] = ErrNodeOffline
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			lists[i], errs[i] = v.src.Search(sctx, n.Name, q, limit)
		}()
	}
	wg.Wait()
	all := [][]chat.SearchHit{local}
	for i, n := range nodes {
		switch {
		case errors.Is(errs[i], ErrNodeOffline):
			unsearched = append(unsearched, Unsearched{Node: n.Name, Reason: "offline"})
		case errors.Is(errs[i], context.DeadlineExceeded) && ctx.Err() == nil:
			unsearched = append(unsearched, Unsearched{Node: n.Name, Reason: fmt.Sprintf("no answer within %v", searchWait)})
		case errs[i] != nil:
			unsearched = append(unsearched, Unsearched{Node: n.Name, Reason: errs[i].Error()})
		default:
			all = append(all, lists[i])
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	hits = []chat.SearchHit{}
	for k := 0; len(hits) < limit; k++ {
		more := false
		for _, l := range all {
			if k < len(l) && len(hits) < limit {
				hits, more = append(hits, l[k]), true
			}
		}
		if !more {
			break
		}
	}
	return hits, unsearched, nil
}

// Search is SearchAll's hits (store.Store's Search, for every reader).
func (v *View) Search(ctx context.Context, q string, limit int) ([]chat.SearchHit, error) {
	hits, _, err := v.SearchAll(ctx, q, limit)
	return hits, err
}
