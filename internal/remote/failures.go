package remote

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/fanout"
	"github.com/parleyhq/parley/internal/router"
	"github.com/parleyhq/parley/internal/store"
)

// remoteFailures keeps the messages for nodes' threads that failed at the
// hub before their node took them (it refused them, they waited longer than
// input_wait, the machine was revoked or never joined, its queue at the hub
// was full): the node's log never holds them, so the hub's store does
// (store.FailedRemote), and each is shown at once, its message and its
// failed receipt with the reason, to every view of the thread and every
// connection of its sender's route (hub.PublishAside); a reload shows it
// among the thread's events (cluster.View.Asides) and search finds it.
type remoteFailures struct {
	st     store.Store
	events *fanout.Fanout
	log    *slog.Logger
}

// keep records m, sent from route from to the node's thread, as failed
// with reason (or, state chat.DeliveryUnknown, as ended where its machine
// may have applied it), shows it, and returns its receipt.
func (k *remoteFailures) keep(ctx context.Context, from chat.RouteKey, thread chat.ThreadID, m router.Message, state, reason string) chat.Delivery {
	f := store.FailedRemote{Thread: thread, From: from, MessageID: m.MessageID, Text: m.Text, Reason: reason, At: time.Now(), State: state}
	if err := k.st.PutFailedRemote(ctx, f); err != nil {
		// Shown all the same: its sender must learn it failed; only a
		// reload will not show it.
		k.log.Error("cluster: keep a failed message of a machine's thread", "thread", thread, "message", m.MessageID, "err", err)
	}
	k.events.PublishAside(from, cluster.FailedEvents(f)...)
	return chat.Delivery{MessageID: m.MessageID, State: state, Detail: reason}
}

// inputFailed is the hub's cluster.HubOptions.InputFailed: a message whose
// sender heard only that it waits is kept and shown failed. A sender still
// waiting (Told) had the refusal as its answer, as on one machine; a
// control is never queued. It runs on the node's forwarder (or in a
// revoke): one write to the hub's store.
func (k *remoteFailures) inputFailed(f cluster.FailedInput) {
	log := k.log.With("node", f.Node, "input", f.ID, "reason", f.Reason)
	var in clusterInput
	if err := json.Unmarshal(f.Data, &in); err != nil || f.Told || in.Kind != "send" || in.Message == nil {
		log.Warn("cluster: an input for a machine failed")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	state := chat.DeliveryFailed
	if f.InDoubt {
		state = chat.DeliveryUnknown
	}
	k.keep(ctx, in.From, cluster.RemoteID(f.Node, in.Thread), *in.Message, state, f.Reason)
	log.Info("cluster: a message for a machine ended at the hub; its thread shows it " + state)
}

// threadGone ends the hub's routes to a node's thread deleted on its node,
// and its views (cluster.HubOptions.ThreadGone). Before the router runs,
// only the kept routes are there to remove (the router loads them after).
func threadGone(rt *router.Router, st store.Store, log *slog.Logger, id chat.ThreadID) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	if rt != nil {
		err = rt.RemoteThreadGone(ctx, id)
	} else {
		err = st.DetachRemoteRoutes(ctx, id)
	}
	if err != nil {
		log.Warn("cluster: end the routes of a thread deleted on its machine", "thread", id, "err", err)
	}
	// Its messages that failed here go with it (else search finds them).
	if err := st.DropFailedRemotes(ctx, id); err != nil {
		log.Warn("cluster: forget the failed messages of a thread deleted on its machine", "thread", id, "err", err)
	}
}
