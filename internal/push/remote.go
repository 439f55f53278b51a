package push

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/parleyhq/parley/internal/chat"
)

// Remote is, at a cluster's hub, the open cards of other machines' threads
// as each machine last told the hub (its thread summaries in the directory,
// written from its own store). The hub's push service reconciles them
// against its own outbox, keyed by card as its own threads' are: the
// machine's store stays the only truth of its cards, the hub's outbox the
// only record of what was pushed. A machine that is away keeps its last
// summary, so its cards are neither pushed again nor closed until it tells
// otherwise.
type Remote interface {
	// Owns says whether an id is another machine's thread.
	Owns(id chat.ThreadID) bool
	// Changed is closed at the next change of what Threads says.
	Changed() <-chan struct{}
	// Threads lists the other machines' threads that have open cards.
	Threads() []RemoteThread
}

// RemoteThread is another machine's thread with open cards.
type RemoteThread struct {
	Thread    chat.Thread // its id at the hub, Node its machine
	AgentName string      // its agent's name on that machine ("" shows the id)
	Cards     []Card
}

// reconcileRemote reconciles the remote threads whose open cards changed
// since the last look, those that left the list (their cards closed, or the
// thread is gone), and also (at start) the ids given (remote threads whose
// outbox holds an open push not closed).
func (s *Service) reconcileRemote(ctx context.Context, also []chat.ThreadID) {
	now := map[chat.ThreadID]RemoteThread{}
	for _, rt := range s.opt.Remote.Threads() {
		now[rt.Thread.ID] = rt
	}
	todo := map[chat.ThreadID]bool{}
	for _, id := range also {
		todo[id] = true
	}
	for id, rt := range now {
		if k := cardsKey(rt.Cards); s.remote[id] != k {
			todo[id] = true
			s.remote[id] = k
		}
	}
	for id := range s.remote {
		if _, ok := now[id]; !ok {
			todo[id] = true
			delete(s.remote, id)
		}
	}
	ids := make([]chat.ThreadID, 0, len(todo))
	for id := range todo {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		rt := now[id]
		th := rt.Thread
		th.Agent = cmp.Or(rt.AgentName, th.Agent)
		s.reconcileOpen(ctx, id, func() (chat.Thread, error) { return th, nil }, rt.Cards)
	}
}

// cardsKey names a set of open cards (what changed is which are open).
func cardsKey(cs []Card) string {
	ids := make([]string, 0, len(cs))
	for _, c := range cs {
		ids = append(ids, c.RequestID)
	}
	slices.Sort(ids)
	return strings.Join(ids, "\x00")
}
