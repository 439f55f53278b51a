package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/fanout"
	"github.com/parleyhq/parley/internal/push"
	"github.com/parleyhq/parley/internal/router"
	"github.com/parleyhq/parley/internal/store"
)

// What the hub hands a node for one of its threads (cluster.Hub.Request):
// a message, a new thread with its first message, or a control. Thread is
// the node's own id. Written and read here only, by the same binary.
type clusterInput struct {
	Kind    string          `json:"kind"` // "send", "new", "control", "failed"
	From    chat.RouteKey   `json:"from"` // the route at the hub
	Thread  chat.ThreadID   `json:"thread,omitempty"`
	Message *router.Message `json:"message,omitempty"`
	Control *router.Control `json:"control,omitempty"`
	// Resume continues an agent's session on the node (kind "resume").
	Resume *router.ResumeIntent `json:"resume,omitempty"`
	// Reason is why a "failed" message never reached this node in time. A
	// hub now keeps such a message itself (remoteFailures); a record an
	// older hub queued, still in its stream across an upgrade, is applied.
	Reason string `json:"reason,omitempty"`
	// Ask is the hub's ask a "new" thread is for (router.NewIntent.Ask):
	// asked again, the node answers the thread it made for it.
	Ask string `json:"ask,omitempty"`
}

// sendResult is a node's answer to a send or a new thread.
type sendResult struct {
	Thread   chat.ThreadID `json:"thread"`
	Delivery chat.Delivery `json:"delivery"`
	// Duplicate: the route sent that message before (a resend); Delivery
	// is the receipt it has now.
	Duplicate bool `json:"duplicate,omitempty"`
}

// hubChannel is the channel of routes at the hub as a node's router keeps
// them: "hub", with the hub's route as the chat.
const hubChannel = "hub"

// applyInput applies one input from the hub on this node and returns once
// its router has committed it. A duplicate (the hub asked again) answers
// its current receipt; what can never be applied is refused with the chat
// error it is, so the sender at the hub gets that error.
func (d *Daemon) applyInput(ctx context.Context, _ string, data []byte) ([]byte, error) {
	var in clusterInput
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, cluster.Refuse(fmt.Errorf("%w: an input from the hub that is not one: %v", chat.ErrBadInput, err))
	}
	from := chat.RouteKey{Channel: hubChannel, Chat: in.From.String()}
	switch {
	case (in.Kind == "send" || in.Kind == "new") && in.Message != nil:
		m := *in.Message
		if in.Kind == "new" {
			if m.Intent == nil || m.Intent.New == nil {
				return nil, cluster.Refuse(fmt.Errorf("%w: a new thread without its intent", chat.ErrBadInput))
			}
			nw := *m.Intent.New
			nw.Node, nw.Ask = "", in.Ask // here, for the hub's ask
			m.Intent = &router.Intent{New: &nw}
		}
		dl, th, err := d.router.Send(ctx, router.SendRequest{From: from, Thread: in.Thread, Message: m})
		dup := errors.Is(err, chat.ErrDuplicate)
		if dup {
			err = nil
		}
		if err != nil {
			return nil, refusal(err)
		}
		return json.Marshal(sendResult{Thread: th, Delivery: dl, Duplicate: dup})
	case in.Kind == "failed" && in.Message != nil:
		_, _, err := d.router.Send(ctx, router.SendRequest{From: from, Thread: in.Thread, Message: *in.Message, Failed: in.Reason})
		if errors.Is(err, chat.ErrDuplicate) {
			err = nil // it reached this node after all, or was recorded already
		}
		return nil, controlRefusal(err)
	case in.Kind == "resume" && in.Resume != nil:
		ri := *in.Resume
		ri.Node = "" // here
		th, err := d.router.ContinueSession(ctx, from, ri)
		if err != nil {
			return nil, controlRefusal(err)
		}
		return json.Marshal(sendResult{Thread: th})
	case in.Kind == "control" && in.Control != nil:
		c := *in.Control
		c.From, c.Thread = from, in.Thread
		return nil, controlRefusal(d.router.Control(ctx, c))
	}
	return nil, cluster.Refuse(fmt.Errorf("%w: an input of kind %q", chat.ErrBadInput, in.Kind))
}

// refusal makes a router error the node's answer to a message: a limit that
// passes (the thread's queue full, the new-thread rate, the agent sessions
// cap) is tried again by the hub, the message kept in its queue, as are
// shutting down and running out of time; anything else is the input's end.
func refusal(err error) error {
	if errors.Is(err, chat.ErrBusy) || errors.Is(err, chat.ErrRateLimited) || errors.Is(err, chat.ErrSessionLimit) {
		return err
	}
	return controlRefusal(err)
}

// controlRefusal makes a router error the node's answer to a control: asked
// now and never kept (cluster.Hub.Ask), so only shutting down and running out
// of time are not its end.
func controlRefusal(err error) error {
	if err == nil || errors.Is(err, chat.ErrClosed) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return err
	}
	return cluster.Refuse(err)
}

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
// with reason, shows it, and returns its receipt.
func (k *remoteFailures) keep(ctx context.Context, from chat.RouteKey, thread chat.ThreadID, m router.Message, reason string) chat.Delivery {
	f := store.FailedRemote{Thread: thread, From: from, MessageID: m.MessageID, Text: m.Text, Reason: reason, At: time.Now()}
	if err := k.st.PutFailedRemote(ctx, f); err != nil {
		// Shown all the same: its sender must learn it failed; only a
		// reload will not show it.
		k.log.Error("cluster: keep a failed message of a machine's thread", "thread", thread, "message", m.MessageID, "err", err)
	}
	k.events.PublishAside(from, cluster.FailedEvents(f)...)
	return chat.Delivery{MessageID: m.MessageID, State: chat.DeliveryFailed, Detail: reason}
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
	k.keep(ctx, in.From, cluster.RemoteID(f.Node, in.Thread), *in.Message, f.Reason)
	log.Info("cluster: a message for a machine failed at the hub; its thread shows it failed")
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

// remote is the hub's router.Remote: a node's thread is reached through the
// cluster (cluster.View reads it, cluster.Hub.Request carries what is sent).
type remote struct {
	hub      *cluster.Hub
	view     *cluster.View
	node     string
	failed   *remoteFailures
	receipts *receipts
}

// How long a sender at the hub waits for a node that is online to take its
// input; after that the input stays queued and the receipt says so.
const remoteWait = 10 * time.Second

func (r *remote) Owns(id chat.ThreadID) bool { return cluster.NodeOf(id) != "" }
func (r *remote) Local() string              { return r.node }

// Thread reads a remote thread from its machine, or while the machine is
// away from the hub's copy of its recent events (cluster.RemoteSource); one
// of an away machine the hub has no summary of fails.
func (r *remote) Thread(ctx context.Context, id chat.ThreadID) (chat.Thread, error) {
	if err := r.hub.NotJoined(cluster.NodeOf(id)); err != nil {
		return chat.Thread{}, err
	}
	return r.hub.Source().Thread(ctx, id)
}

// online says whether node's heartbeat is current; a machine not joined (revoked,
// or never) is a *cluster.NotJoinedError.
func (r *remote) online(ctx context.Context, node string) (bool, error) {
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

func waitsFor(node string) string { return "waits for machine " + node }

// inputID is a message's id at its node's input stream: a message id is
// its route's, so two routes' equal ids stay two inputs.
func inputID(from chat.RouteKey, messageID string) string { return from.String() + "/" + messageID }

func (r *remote) Send(ctx context.Context, from chat.RouteKey, id chat.ThreadID, m router.Message) (chat.Delivery, chat.ThreadID, error) {
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
		return r.failed.keep(ctx, from, id, m, err.Error()), id, nil
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
	case errors.Is(err, cluster.ErrNotKept):
		// Its machine's queue at the hub is full (or JetStream failed):
		// nothing of it waits there.
		return r.failed.keep(ctx, from, id, m, err.Error()), id, nil
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
func (r *remote) resent(ctx context.Context, thread chat.ThreadID, from chat.RouteKey, messageID string, waits chat.Delivery) chat.Delivery {
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
func (r *remote) newThread(ctx context.Context, node string, online bool, id string, data []byte) (chat.Delivery, chat.ThreadID, error) {
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
func (r *remote) Control(ctx context.Context, c router.Control) error {
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
func (r *remote) Resume(ctx context.Context, from chat.RouteKey, ri router.ResumeIntent) (chat.ThreadID, error) {
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

// readStore is what the daemon's readers use: the hub's view of every
// machine's threads, or this machine's store.
func (d *Daemon) readStore() store.Store {
	if d.view != nil {
		return d.view
	}
	return d.store
}

// hubMachines is the hub's machines as the web channel shows them, its own
// agents under its own node name.
type hubMachines struct {
	hub  *cluster.Hub
	node string
}

func (m hubMachines) Agents(ctx context.Context, own []chat.AgentInfo) ([]chat.AgentInfo, error) {
	return m.hub.Agents(ctx, m.node, own)
}

func (m hubMachines) Node() string { return m.node }

func (m hubMachines) MachinesChanged() <-chan struct{} { return m.hub.MachinesChanged() }

func (m hubMachines) Machines(ctx context.Context) ([]cluster.NodeStatus, error) {
	return m.hub.Machines(ctx)
}

// hubCards is the hub's push.Remote: the nodes' threads from their summaries
// in the directory (each node writes them from its own store: open cards,
// newest finished turn and error), so the hub's phones hear of a node's
// threads as they hear of the hub's.
type hubCards struct{ hub *cluster.Hub }

func (c hubCards) Owns(id chat.ThreadID) bool { return cluster.NodeOf(id) != "" }
func (c hubCards) Changed() <-chan struct{}   { return c.hub.ThreadsChanged() }
func (c hubCards) Threads() []push.RemoteThread {
	ths, err := c.hub.Threads(context.Background()) // from memory
	if err != nil {
		return nil
	}
	var names map[string]string // node/agent → name, read once if a push may be due
	var joined map[string]time.Time
	out := make([]push.RemoteThread, 0, len(ths))
	for _, rt := range ths {
		if names == nil && (len(rt.Cards) > 0 || rt.Turn != nil || rt.Error != nil) {
			names, joined = map[string]string{}, map[string]time.Time{}
			agents, _ := c.hub.Agents(context.Background(), "", nil)
			for _, a := range agents {
				names[a.Node+"/"+a.ID] = a.Name
			}
			nodes, _ := c.hub.Nodes(context.Background())
			for _, n := range nodes {
				joined[n.Name] = n.Joined
			}
		}
		cards := make([]push.Card, 0, len(rt.Cards))
		for _, oc := range rt.Cards {
			cards = append(cards, push.Card{RequestID: oc.RequestID, Kind: oc.Kind, Asks: oc.Asks})
		}
		out = append(out, push.RemoteThread{Thread: rt.Thread, AgentName: names[rt.Node+"/"+rt.Thread.Agent], Cards: cards,
			Turn: rt.Turn, Error: rt.Error, Joined: joined[rt.Node]})
	}
	return out
}

// startAskResolver shows each route the thread its kept ask made on another
// machine, asking that machine each time one comes online: a hub killed
// before it heard a machine's answer learns it then, not only with the
// chat's next message. Then it shows the routes on that machine's threads
// their thread again (showAgain).
func startAskResolver(r *router.Router, h *cluster.Hub, log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		shown := map[string]time.Time{} // showAgain's: each online machine's link-up time
		for {
			changed := h.MachinesChanged()
			resolveAsks(ctx, r, h, log)
			showAgain(ctx, r, h, log, shown)
			select {
			case <-ctx.Done():
				return
			case <-changed:
			}
		}
	}()
	return func() { cancel(); <-done }
}

// resolveAsks asks each online machine which thread each kept ask for it
// made, and shows each route its thread.
func resolveAsks(ctx context.Context, r *router.Router, h *cluster.Hub, log *slog.Logger) {
	nodes, err := h.Nodes(ctx)
	if err != nil {
		return
	}
	for _, n := range nodes {
		if !n.Online {
			continue
		}
		asks, err := r.KeptAsks(ctx, n.Name)
		if err != nil {
			return // the router is closing
		}
		for from, ask := range asks {
			id, err := h.Source().AskedThread(ctx, n.Name, ask)
			switch {
			case errors.Is(err, chat.ErrNotFound):
				continue // not made there: the chat's next message asks
			case err != nil:
				log.Warn("cluster: which thread a kept ask made", "node", n.Name, "route", from.String(), "err", err)
				continue
			}
			if err := r.AskAnswered(ctx, from, ask, id); err != nil {
				log.Warn("cluster: show a route the thread its ask made", "route", from.String(), "err", err)
			}
		}
	}
}

// showAgain makes every connection of a route showing a thread of a machine
// that came online, or linked again, since the last look (shown: each online
// machine's link-up time) follow that thread (router.ShowAgain): one that
// opened while the machine was away, or right after the hub's restart,
// showed no thread, and follows it now with no reconnect: the thread, its
// log from the client's since, live events and receipts.
func showAgain(ctx context.Context, r *router.Router, h *cluster.Hub, log *slog.Logger, shown map[string]time.Time) {
	nodes, err := h.Nodes(ctx)
	if err != nil {
		return
	}
	back := map[string]bool{}
	for _, n := range nodes {
		switch {
		case !n.Online:
			delete(shown, n.Name)
		case !shown[n.Name].Equal(n.Since):
			shown[n.Name] = n.Since
			back[n.Name] = true
		}
	}
	if len(back) == 0 {
		return
	}
	err = r.ShowAgain(ctx, func(id chat.ThreadID) bool { return back[cluster.NodeOf(id)] })
	if err != nil && !errors.Is(err, chat.ErrClosed) {
		log.Warn("cluster: show the routes of a machine back their threads", "err", err)
	}
}
