package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/router"
)

// remoteThreads is the hub's router.Remote: a node's thread is reached through the
// cluster (cluster.View reads it, cluster.Hub.Request carries what is sent).
type remoteThreads struct {
	hub      *cluster.Hub
	view     *cluster.View
	node     string
	failed   *remoteFailures
	receipts *receipts
}

// How long a sender at the hub waits for a node that is online to take its
// input; after that the input stays queued and the receipt says so.
const remoteWait = 10 * time.Second

func (r *remoteThreads) Owns(id chat.ThreadID) bool { return cluster.NodeOf(id) != "" }
func (r *remoteThreads) Local() string              { return r.node }

// Thread reads a remote thread from its machine, or while the machine is
// away from the hub's copy of its recent events (cluster.RemoteSource); one
// of an away machine the hub has no summary of fails.
func (r *remoteThreads) Thread(ctx context.Context, id chat.ThreadID) (chat.Thread, error) {
	if err := r.hub.NotJoined(cluster.NodeOf(id)); err != nil {
		return chat.Thread{}, err
	}
	return r.hub.Source().Thread(ctx, id)
}

// online says whether node's heartbeat is current; a machine not joined (revoked,
// or never) is a *cluster.NotJoinedError.
func (r *remoteThreads) online(ctx context.Context, node string) (bool, error) {
	if err := r.hub.NotJoined(node); err != nil {
		return false, err
	}
	nodes, err := r.hub.Nodes(ctx)
	if err != nil {
		return false, err
	}
	for _, n := range nodes {
		if n.Name == node {
			return n.Online, nil
		}
	}
	return false, nil // revoked just now
}

func (r *remoteThreads) Send(ctx context.Context, from chat.RouteKey, id chat.ThreadID, m router.Message) (chat.Delivery, chat.ThreadID, error) {
	in := clusterInput{Kind: "send", From: from, Message: &m}
	node, thread, _ := cluster.SplitRemoteID(id)
	if id == "" {
		in.Kind, node, in.Ask = "new", m.Intent.New.Node, m.Intent.New.Ask
		if err := cluster.CheckName(node); err != nil {
			return chat.Delivery{}, "", fmt.Errorf("%w: %v", chat.ErrBadInput, err)
		}
	}
	in.Thread = thread
	data, err := json.Marshal(in)
	if err != nil {
		return chat.Delivery{}, "", err
	}
	online, err := r.online(ctx, node)
	if in.Kind == "new" {
		if err != nil {
			return chat.Delivery{}, "", err
		}
		return r.newThread(ctx, node, online, inputID(from, m.MessageID), data)
	}
	// A message for a thread that is there (the route shows it) and that
	// cannot reach its machine fails as any message that does not reach
	// its agent: a failed receipt, with the reason, kept in the thread.
	var notJoined *cluster.NotJoinedError
	if errors.As(err, &notJoined) {
		return r.failed.keep(ctx, from, id, m, chat.DeliveryFailed, err.Error()), id, nil
	}
	if err != nil {
		return chat.Delivery{}, "", err
	}
	queued := chat.Delivery{MessageID: m.MessageID, State: chat.DeliveryQueued, Detail: waitsFor(node)}
	wait := remoteWait
	if !online {
		wait = 0 // queued for it, and nobody waits for a machine that is away
	}
	res, err := r.hub.Request(ctx, node, string(thread), inputID(from, m.MessageID), data, wait)
	if err == nil || errors.Is(err, cluster.ErrResent) || errors.Is(err, cluster.ErrWaiting) {
		// Sent again after it failed, and kept for its machine now: a
		// retry, whose failure is over. Not before: a retry that is not
		// kept leaves the failure shown.
		if derr := r.failed.st.DropFailedRemote(ctx, from, m.MessageID); derr != nil {
			r.failed.log.Warn("cluster: forget a retried message's failure", "message", m.MessageID, "err", derr)
		}
	}
	switch {
	case errors.Is(err, cluster.ErrResent):
		return r.resent(ctx, id, from, m.MessageID, queued), id, chat.ErrDuplicate
	case errors.Is(err, cluster.ErrWaiting):
		return queued, id, chat.ErrAway
	case errors.Is(err, cluster.ErrInDoubt):
		// Its machine was revoked (or it waited past input_wait) while it
		// was being handed over: it may have reached the agent.
		return r.failed.keep(ctx, from, id, m, chat.DeliveryUnknown, err.Error()), id, nil
	case errors.Is(err, cluster.ErrNotKept):
		// Its machine's queue at the hub is full (or JetStream failed):
		// nothing of it waits there.
		return r.failed.keep(ctx, from, id, m, chat.DeliveryFailed, err.Error()), id, nil
	case err != nil:
		return chat.Delivery{}, "", err
	}
	var sr sendResult
	if err := json.Unmarshal(res, &sr); err != nil {
		return chat.Delivery{}, "", fmt.Errorf("machine %s answered the message with something else: %w", node, err)
	}
	if sr.Duplicate {
		err = chat.ErrDuplicate // its receipt is answered, as on one machine
	}
	return sr.Delivery, cluster.RemoteID(node, sr.Thread), err
}

// How long a resend waits for its node to say the receipt its first copy
// has there: a node that is connected answers from its store at once.
const resendWait = 3 * time.Second

// resent is the receipt of a message sent again under its id to thread (a
// client that reconnected sends again what it had no receipt for), at once,
// as on one machine: the state its first copy reached, asked of the
// thread's node; while the node does not answer, the newest its log said
// (receipts); else it still waits here. Never a wait for an end that goes to
// the first copy's sender, and never a receipt older than one it had.
func (r *remoteThreads) resent(ctx context.Context, thread chat.ThreadID, from chat.RouteKey, messageID string, waits chat.Delivery) chat.Delivery {
	node, _, _ := cluster.SplitRemoteID(thread)
	ctx, cancel := context.WithTimeout(ctx, resendWait)
	defer cancel()
	d, err := r.hub.Source().Input(ctx, node, chat.RouteKey{Channel: hubChannel, Chat: from.String()}, messageID)
	switch {
	case err == nil:
		return d
	case errors.Is(err, chat.ErrNotFound):
		return waits // not there yet: it waits in node's stream here
	}
	if d, ok := r.receipts.get(thread, inputID(from, messageID), messageID); ok {
		return d
	}
	return waits
}

// newThread starts a thread on node with its first message, now or not at
// all: a new thread is made on a machine that is there to check its agent
// and directory, never queued for later (a first message applied later
// would make a thread no chat at the hub is attached to, its sender told
// only "queued"). So it is asked, past the node's stream (cluster.Hub.Ask):
// a machine offline, not connected (just died: its heartbeat still looks
// current) or not answering in time fails the send at once with the
// reason, the sender keeps the text, and nothing is kept for later. The
// node remembers what it applied by id: a retry of a send whose answer was
// lost gets the thread it made; and it keeps which thread each ask made
// (clusterInput.Ask), so the route's next message, asking again, gets it too.
func (r *remoteThreads) newThread(ctx context.Context, node string, online bool, id string, data []byte) (chat.Delivery, chat.ThreadID, error) {
	if !online {
		return chat.Delivery{}, "", fmt.Errorf("machine %s is offline: a new thread there waits until it is back", node)
	}
	res, err := r.hub.Ask(ctx, node, id, data, remoteWait)
	if err != nil {
		return chat.Delivery{}, "", fmt.Errorf("the new thread on machine %s was not started: %w", node, err)
	}
	var sr sendResult
	if err := json.Unmarshal(res, &sr); err != nil {
		return chat.Delivery{}, "", fmt.Errorf("machine %s answered the message with something else: %w", node, err)
	}
	return sr.Delivery, cluster.RemoteID(node, sr.Thread), nil
}

// Control goes to a node that is online now, never through its queue: a
// stop or an answer kept for later could land on another turn than the one
// it was meant for (cluster.Hub.Ask keeps nothing).
func (r *remoteThreads) Control(ctx context.Context, c router.Control) error {
	node, thread, _ := cluster.SplitRemoteID(c.Thread)
	online, err := r.online(ctx, node)
	if err != nil {
		return err
	}
	if !online {
		return fmt.Errorf("machine %s is offline", node)
	}
	in := clusterInput{Kind: "control", From: c.From, Thread: thread, Control: &c}
	data, err := json.Marshal(in)
	if err != nil {
		return err
	}
	_, err = r.hub.Ask(ctx, node, chat.NewID("c"), data, remoteWait)
	return err
}

// Resume continues a session on its node, asked now like a control (a
// session to continue later, when the machine is back, could be running by
// then): the node makes or finds the thread and answers its id.
func (r *remoteThreads) Resume(ctx context.Context, from chat.RouteKey, ri router.ResumeIntent) (chat.ThreadID, error) {
	if err := cluster.CheckName(ri.Node); err != nil {
		return "", fmt.Errorf("%w: %v", chat.ErrBadInput, err)
	}
	online, err := r.online(ctx, ri.Node)
	if err != nil {
		return "", err
	}
	if !online {
		return "", fmt.Errorf("machine %s is offline: continue the session when it is back", ri.Node)
	}
	data, err := json.Marshal(clusterInput{Kind: "resume", From: from, Resume: &ri})
	if err != nil {
		return "", err
	}
	res, err := r.hub.Ask(ctx, ri.Node, chat.NewID("r"), data, remoteWait)
	if err != nil {
		return "", fmt.Errorf("the session was not continued on machine %s: %w", ri.Node, err)
	}
	var sr sendResult
	if err := json.Unmarshal(res, &sr); err != nil {
		return "", fmt.Errorf("machine %s answered with something else: %w", ri.Node, err)
	}
	return cluster.RemoteID(ri.Node, sr.Thread), nil
}
