package remote

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/fanout"
	"github.com/parleyhq/parley/internal/push"
	"github.com/parleyhq/parley/internal/router"
	"github.com/parleyhq/parley/internal/store"
)

// HubOptions are what a cluster's hub adds to a daemon.
type HubOptions struct {
	// Cluster starts the hub; StartHub sets its InputFailed and ThreadGone.
	// Its Self names this machine, its Logger logs here too.
	Cluster cluster.HubOptions
	// Store is the hub's own: it keeps the nodes' threads' failed messages
	// and the routes a deleted thread ends.
	Store store.Store
	// Events take the nodes' live events (the relay) and the failures shown.
	Events *fanout.Fanout
}

// Hub is a cluster's hub as the daemon's parts reach the nodes' threads
// through it: the router (Remote), the readers (View), the web channel
// (Machines), push (Cards).
type Hub struct {
	hub       *cluster.Hub
	view      *cluster.View
	stopRelay func()
	failed    *remoteFailures
	receipts  *receipts // of the messages sent to nodes' threads, from the relay
	node      string
	log       *slog.Logger
	// router is set once it runs (RouterStarted): before, a thread deleted
	// on its node has only its kept routes removed.
	router   atomic.Pointer[router.Router]
	stopAsks func() // the resolver of kept asks (StartAskResolver); nil before
}

// StartHub runs the hub's NATS server, with the view of every machine's
// threads and the relay of the nodes' live events into opt.Events.
func StartHub(ctx context.Context, opt HubOptions) (*Hub, error) {
	log := opt.Cluster.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &Hub{node: opt.Cluster.Self, log: log}
	h.failed = &remoteFailures{st: opt.Store, events: opt.Events, log: log}
	copt := opt.Cluster
	copt.InputFailed = func(_ *cluster.Hub, f cluster.FailedInput) { h.failed.inputFailed(f) }
	copt.ThreadGone = func(id chat.ThreadID) { threadGone(h.router.Load(), opt.Store, log, id) }
	ch, err := cluster.StartHub(ctx, copt)
	if err != nil {
		return nil, err
	}
	rc := newReceipts()
	stop, err := ch.Relay(func(ev chat.Event) { rc.see(ev); opt.Events.Publish(ev) })
	if err != nil {
		ch.Close()
		return nil, err
	}
	h.hub, h.view, h.stopRelay, h.receipts = ch, cluster.NewView(opt.Store, ch), stop, rc
	return h, nil
}

// Cluster is the running hub.
func (h *Hub) Cluster() *cluster.Hub { return h.hub }

// View is the readers' store: every machine's threads.
func (h *Hub) View() *cluster.View { return h.view }

// Remote is the router's reach to the nodes' threads.
func (h *Hub) Remote() router.Remote {
	return &remoteThreads{hub: h.hub, view: h.view, node: h.node, failed: h.failed, receipts: h.receipts}
}

// Machines is the hub's machines for the web channel.
func (h *Hub) Machines() Machines { return Machines{hub: h.hub, node: h.node} }

// Cards are the nodes' threads for push.
func (h *Hub) Cards() push.Remote { return hubCards{hub: h.hub, watch: h.hub.WatchThreads()} }

// RouterStarted tells the hub its router runs: a thread deleted on its node
// ends the router's routes to it from now on.
func (h *Hub) RouterStarted(rt *router.Router) { h.router.Store(rt) }

// StartAskResolver shows routes the threads their kept asks made, as each
// machine comes online (startAskResolver), until Close.
func (h *Hub) StartAskResolver(rt *router.Router) { h.stopAsks = startAskResolver(rt, h.hub, h.log) }

// Close stops the resolver, the relay and the hub (nil: nothing).
func (h *Hub) Close() {
	if h == nil {
		return
	}
	if h.stopAsks != nil {
		h.stopAsks()
	}
	h.stopRelay()
	h.hub.Close()
}
