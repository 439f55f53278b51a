package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/parleyhq/parley/internal/chat"
)

// The hub's side of nodes' threads. At the hub a node's thread is named
// "<thread>@<node>": ids of threads made on different machines never meet,
// a local id (t_…) never has an '@', and a node can only ever speak for ids
// ending in its own name (it may publish only under parley.from.<node>).

// RemoteID is the hub's name for node's thread.
func RemoteID(node string, thread chat.ThreadID) chat.ThreadID {
	return chat.ThreadID(string(thread) + "@" + node)
}

// SplitRemoteID returns the node and its own id of a remote thread; ok is
// false for a local thread's id.
func SplitRemoteID(id chat.ThreadID) (node string, thread chat.ThreadID, ok bool) {
	t, n, ok := strings.Cut(string(id), "@")
	if !ok || t == "" || CheckName(n) != nil || strings.ContainsAny(t, ".*> \t\r\n") {
		return "", "", false
	}
	return n, chat.ThreadID(t), true
}

// sourceTimeout bounds one source request to a node.
const sourceTimeout = 15 * time.Second

// ErrNodeOffline says the node owning a thread does not answer.
var ErrNodeOffline = errors.New("the machine is offline")

// Source reads nodes' threads for the route follower at the hub: each call is
// a request the owning node answers from its own store. Ids are remote ids.
func (h *Hub) Source() *RemoteSource { return &RemoteSource{h: h} }

// RemoteSource is a follow.Source over the nodes.
type RemoteSource struct{ h *Hub }

func (s *RemoteSource) ask(ctx context.Context, id chat.ThreadID, req srcRequest) (srcAnswer, string, error) {
	node, th, ok := SplitRemoteID(id)
	if !ok {
		return srcAnswer{}, "", chat.ErrNotFound
	}
	req.Thread = th
	return s.askNode(ctx, node, req)
}

// askNode sends node a source request and reads its answer.
func (s *RemoteSource) askNode(ctx context.Context, node string, req srcRequest) (srcAnswer, string, error) {
	b, _ := json.Marshal(req)
	ctx, cancel := context.WithTimeout(ctx, sourceTimeout)
	defer cancel()
	m, err := s.h.nc.RequestWithContext(ctx, sourceSubject(node), b)
	if errors.Is(err, nats.ErrNoResponders) {
		return srcAnswer{}, node, fmt.Errorf("%w: %s", ErrNodeOffline, node)
	}
	if err != nil {
		return srcAnswer{}, node, fmt.Errorf("cluster: ask machine %s: %w", node, err)
	}
	var ans srcAnswer
	if err := json.Unmarshal(m.Data, &ans); err != nil {
		return srcAnswer{}, node, fmt.Errorf("cluster: machine %s answered something that is not JSON", node)
	}
	switch {
	case ans.NotFound:
		return ans, node, chat.ErrNotFound
	case ans.Error != "":
		return ans, node, fmt.Errorf("machine %s: %s", node, ans.Error)
	}
	return ans, node, nil
}

// AskedThread is the thread node made for a hub's ask id, named by its
// remote id (chat.ErrNotFound: none, or it was deleted since).
func (s *RemoteSource) AskedThread(ctx context.Context, node, ask string) (chat.ThreadID, error) {
	ans, _, err := s.askNode(ctx, node, srcRequest{Op: opAsk, Ask: ask})
	if err != nil {
		return "", err
	}
	if ans.Asked == "" {
		return "", chat.ErrNotFound
	}
	return RemoteID(node, ans.Asked), nil
}

// Input is the receipt a message has on node now, by the route it came
// from as node keeps it and its id there (chat.ErrNotFound: node does not
// hold it).
func (s *RemoteSource) Input(ctx context.Context, node string, route chat.RouteKey, messageID string) (chat.Delivery, error) {
	ans, _, err := s.askNode(ctx, node, srcRequest{Op: opInput, Route: route, MessageID: messageID})
	if err != nil {
		return chat.Delivery{}, err
	}
	if ans.Delivery == nil {
		return chat.Delivery{}, chat.ErrNotFound
	}
	return *ans.Delivery, nil
}

// Thread returns the remote thread, named by its remote id. While its node
// is away it is the thread as its summary last told, up to the newest
// event the hub's copy holds, marked Copy.
func (s *RemoteSource) Thread(ctx context.Context, id chat.ThreadID) (chat.Thread, error) {
	if since, away := s.h.offline(ctx, id); away {
		return s.copyThread(ctx, id, since, fmt.Errorf("%w: %s", ErrNodeOffline, NodeOf(id)))
	}
	ans, node, err := s.ask(ctx, id, srcRequest{Op: opThread})
	if unreachable(ctx, err) {
		return s.copyThread(ctx, id, s.h.lastHeard(ctx, node), err)
	}
	if err != nil {
		return chat.Thread{}, err
	}
	if ans.Thread == nil {
		return chat.Thread{}, chat.ErrNotFound
	}
	th := ans.Thread.thread()
	th.ID, th.Node = RemoteID(node, th.ID), node
	return th, nil
}

// copyThread is thread id as the hub has it while its node is away: its
// summary, its last seq the copy's newest (the summary's when the copy holds
// none: then a replay says the events are not at the hub), no turn (none
// can be followed). Without a summary it fails with why the node was not
// asked.
func (s *RemoteSource) copyThread(ctx context.Context, id chat.ThreadID, since time.Time, why error) (chat.Thread, error) {
	node, th, _ := SplitRemoteID(id)
	if _, joined := s.h.joined(node); !joined {
		return chat.Thread{}, why
	}
	sum, ok := s.h.summaries.get(ThreadKey(node, th))
	if !ok {
		return chat.Thread{}, why
	}
	t := sum.val.Thread
	last, err := s.h.copy.lastSeq(ctx, id)
	if err != nil {
		return chat.Thread{}, fmt.Errorf("cluster: the hub's copy of %s: %w", id, err)
	}
	if last > 0 {
		t.LastSeq = last
	}
	t.TurnMessageID = ""
	t.Copy = &chat.HubCopy{OfflineSince: since}
	return t, nil
}

// unreachable says a request to a node failed for want of the node: not
// connected, or no answer in time while the asker still waits.
func unreachable(ctx context.Context, err error) bool {
	return errors.Is(err, ErrNodeOffline) || errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil
}

// Events returns up to limit events after since, from the node, or from
// the hub's copy while the node is away (the copy's oldest first when it
// starts after since: the follower says the ones before are not here).
func (s *RemoteSource) Events(ctx context.Context, id chat.ThreadID, since int64, limit int) ([]chat.Event, error) {
	if _, away := s.h.offline(ctx, id); away {
		return s.h.copy.events(ctx, id, since, limit)
	}
	evs, err := s.nodeEvents(ctx, id, since, limit)
	if unreachable(ctx, err) {
		return s.h.copy.events(ctx, id, since, limit)
	}
	return evs, err
}

// nodeEvents returns up to limit events after since from the node, asking
// again while the node cut its answer to fit a message.
func (s *RemoteSource) nodeEvents(ctx context.Context, id chat.ThreadID, since int64, limit int) ([]chat.Event, error) {
	var out []chat.Event
	for len(out) < limit {
		ans, _, err := s.ask(ctx, id, srcRequest{Op: opEvents, Since: since, Limit: limit - len(out)})
		if err != nil {
			return nil, err
		}
		if out, err = appendEvents(out, id, ans.Events); err != nil {
			return nil, err
		}
		if !ans.More || len(ans.Events) == 0 {
			break
		}
		since = ans.Events[len(ans.Events)-1].Seq
	}
	return out, nil
}

// Tail returns the thread's last n events (fewer when they did not fit one
// answer: the follower replays the rest before them by Events), from the
// hub's copy while the node is away.
func (s *RemoteSource) Tail(ctx context.Context, id chat.ThreadID, n int) ([]chat.Event, error) {
	if _, away := s.h.offline(ctx, id); away {
		return s.h.copy.tail(ctx, id, n)
	}
	ans, _, err := s.ask(ctx, id, srcRequest{Op: opTail, Limit: n})
	if unreachable(ctx, err) {
		return s.h.copy.tail(ctx, id, n)
	}
	if err != nil {
		return nil, err
	}
	return appendEvents(nil, id, ans.Events)
}

// Cards returns the thread's cards in a state. An away node's are unknown,
// and unanswerable: none is listed for it.
func (s *RemoteSource) Cards(ctx context.Context, id chat.ThreadID, state string) ([]chat.Card, error) {
	if _, away := s.h.offline(ctx, id); away {
		return nil, nil
	}
	ans, _, err := s.ask(ctx, id, srcRequest{Op: opCards, State: state})
	if unreachable(ctx, err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for i := range ans.Cards {
		ans.Cards[i].ThreadID = id
	}
	return ans.Cards, nil
}

// Search searches node's own store; its hits name the node's threads by
// their remote ids.
func (s *RemoteSource) Search(ctx context.Context, node, query string, limit int) ([]chat.SearchHit, error) {
	ans, _, err := s.askNode(ctx, node, srcRequest{Op: opSearch, Query: query, Limit: limit})
	if err != nil {
		return nil, err
	}
	hits := ans.Hits[:0]
	for _, h := range ans.Hits {
		if h.Thread == "" || strings.ContainsAny(string(h.Thread), "@.*> \t\r\n") {
			continue // no id of a thread of its own: a node speaks only for its own
		}
		h.Thread = RemoteID(node, h.Thread)
		hits = append(hits, h)
	}
	return hits, nil
}

// Usage sums the thread's usage, on its node.
func (s *RemoteSource) Usage(ctx context.Context, id chat.ThreadID) (chat.UsageTotals, error) {
	ans, _, err := s.ask(ctx, id, srcRequest{Op: opUsage})
	if err != nil || ans.Usage == nil {
		return chat.UsageTotals{}, err
	}
	return *ans.Usage, nil
}

func appendEvents(out []chat.Event, id chat.ThreadID, evs []wireEvent) ([]chat.Event, error) {
	for _, e := range evs {
		if err := checkEvent(e.Type, e.Payload); err != nil {
			return nil, fmt.Errorf("machine %s: %w", NodeOf(id), err)
		}
		out = append(out, chat.Event{Type: e.Type, Thread: id, Seq: e.Seq, TS: e.TS, Payload: e.Payload})
	}
	return out, nil
}
