// Package router turns people's inputs into thread work. One goroutine (the
// router's) owns the route table and applies session intents in arrival order; one
// goroutine per thread (its lane) owns that thread's state, queue, cards and log.
// Controls (stop, card answers, mode) go straight to the lane's control channel and
// never wait behind a queued message.
package router

import (
	"context"
	"errors"
	"fmt"
	"github.com/parleyhq/parley/internal/rules"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/parleyhq/parley/internal/audit"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/fanout"
	"github.com/parleyhq/parley/internal/marks"
	"github.com/parleyhq/parley/internal/store"
)

// Options configure a Router.
type Options struct {
	Agents       []config.Agent
	DefaultAgent string
	Roots        []string
	// Drivers maps a transport name to its driver. Only the composition root fills
	// it: parley serve with the real transports, tests with scripted ones.
	Drivers    map[string]driver.Driver
	QueueDepth int
	// MaxMessageBytes caps a message's text and images, whatever channel it
	// came from (limits.max_message_bytes).
	MaxMessageBytes int
	// MaxSessions caps the agent sessions running at once (limits.max_sessions).
	MaxSessions int
	// ThreadsPerMinute caps how many threads are made a minute (limits.threads_per_minute).
	ThreadsPerMinute int
	// StopGrace is how long a stopped turn may take to end before the lane ends it
	// itself and closes the session.
	StopGrace time.Duration
	Logger    *slog.Logger
	Metrics   *Metrics
	Now       func() time.Time
	// Remote, on a cluster's hub, reaches other machines' threads (remote.go).
	Remote Remote
	// Tools, when set, gives each agent session parley's own MCP server
	// (internal/mcpserver) with a credential of its own (person.go).
	Tools Tools
	// Node is this machine's name (cluster.node): a session to continue on
	// it is continued here, hub or not.
	Node string
	// Rules answers a permission card by the person's rules before anyone
	// is asked (rules.go); nil asks always.
	Rules func(rules.Call) rules.Verdict
	// Audit records messages sent and cards answered (audit.go); nil records nothing.
	Audit audit.Log
	// Worktrees is the folder threads' own worktrees are made in ([git]
	// worktrees; "" : beside each repository, gitstart.go).
	Worktrees string
}

// Router is parley's input side. Its methods are safe for concurrent use.
type Router struct {
	opt    Options
	store  store.Store
	fanout *fanout.Fanout
	log    *slog.Logger

	cmds chan func()
	done chan struct{}
	wg   sync.WaitGroup

	ctx    context.Context // lanes' lifetime; cancelled by Close
	cancel context.CancelFunc

	// draftIDs names provisional texts (lane.publishDraft), across lanes.
	draftIDs atomic.Int64

	// owned by the router goroutine
	lanes  map[chat.ThreadID]*lane
	routes map[chat.RouteKey]chat.ThreadID
	// deleting holds the threads being deleted (manage.go): nothing is
	// sent to them and no lane is started for them meanwhile.
	deleting map[chat.ThreadID]struct{}
	// startOn holds, per route, a new thread asked for on another machine
	// (NewThread with "agent@node"): it starts with the route's next message,
	// and is kept until the route attaches to a thread (a send that failed
	// leaves it for the next). Kept in the store too (route_asks), so a
	// restart keeps it; attaching the route drops it there.
	startOn map[chat.RouteKey]*startWish
	recent  *recentIDs
	threads *rate.Limiter // new threads a minute

	slots *slots // agent sessions running at once (slots.go)
}

// New builds a router; call Start before use.
func New(st store.Store, h *fanout.Fanout, opt Options) *Router {
	if opt.QueueDepth <= 0 {
		opt.QueueDepth = config.DefaultQueueDepth
	}
	if opt.MaxMessageBytes <= 0 {
		opt.MaxMessageBytes = config.DefaultMaxMessage
	}
	if opt.MaxSessions <= 0 {
		opt.MaxSessions = config.DefaultMaxSessions
	}
	if opt.ThreadsPerMinute <= 0 {
		opt.ThreadsPerMinute = config.DefaultThreadsPerMin
	}
	if opt.StopGrace <= 0 {
		opt.StopGrace = 3 * time.Second
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Metrics == nil {
		opt.Metrics = NewMetrics(nil)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Router{
		opt: opt, store: st, fanout: h, log: opt.Logger,
		cmds: make(chan func(), 256), done: make(chan struct{}),
		ctx: ctx, cancel: cancel,
		lanes: map[chat.ThreadID]*lane{}, routes: map[chat.RouteKey]chat.ThreadID{}, deleting: map[chat.ThreadID]struct{}{},
		startOn: map[chat.RouteKey]*startWish{},
		recent:  newRecentIDs(4096),
		threads: rate.NewLimiter(rate.Every(time.Minute/time.Duration(opt.ThreadsPerMinute)), opt.ThreadsPerMinute),
		slots:   newSlots(opt.MaxSessions, opt.Now),
	}
}

// Start recovers what a previous run left (queued inputs are delivered, inputs and
// turns cut off by a crash end with a reason) and starts the router goroutine.
func (r *Router) Start(ctx context.Context) error {
	routes, err := r.store.Routes(ctx)
	if err != nil {
		return fmt.Errorf("router: load routes: %w", err)
	}
	for _, rt := range routes {
		r.routes[rt.Key] = rt.ThreadID
	}
	if r.opt.Remote != nil { // only a hub's routes ask for threads elsewhere
		asks, err := r.store.RouteAsks(ctx)
		if err != nil {
			return fmt.Errorf("router: load route asks: %w", err)
		}
		for _, a := range asks {
			r.startOn[a.Key] = &startWish{intent: NewIntent{Agent: a.Agent, Cwd: a.Cwd, Node: a.Node, Ask: a.AskID}}
		}
	}
	threads, err := r.store.Threads(ctx)
	if err != nil {
		return fmt.Errorf("router: load threads: %w", err)
	}
	pending, err := r.store.PendingInputs(ctx)
	if err != nil {
		return fmt.Errorf("router: load pending inputs: %w", err)
	}
	byThread := map[chat.ThreadID][]chat.Input{}
	for _, in := range pending {
		byThread[in.ThreadID] = append(byThread[in.ThreadID], in)
	}
	attached, err := r.store.Attachments(ctx)
	if err != nil {
		return fmt.Errorf("router: load attachments: %w", err)
	}
	terms := map[chat.ThreadID]store.Attachment{}
	for _, a := range attached {
		terms[a.Thread] = a
	}
	for _, th := range threads {
		open, err := r.store.Cards(ctx, th.ID, chat.CardOpen)
		if err != nil {
			return fmt.Errorf("router: load cards: %w", err)
		}
		ins := byThread[th.ID]
		term, followed := terms[th.ID]
		if th.TurnMessageID == "" && len(ins) == 0 && len(open) == 0 && !followed &&
			(th.State == chat.ThreadUnloaded || th.State == chat.ThreadCrashed || th.State == chat.ThreadNoAgent || th.State == chat.ThreadHandedBack) {
			continue
		}
		l := r.newLane(th)
		if err := l.recover(ctx, ins, open); err != nil {
			return fmt.Errorf("router: recover thread %s: %w", th.ID, err)
		}
		if followed {
			if err := l.reattach(ctx, term); err != nil {
				return fmt.Errorf("router: follow thread %s's terminal again: %w", th.ID, err)
			}
		}
		r.startLane(l)
	}
	r.wg.Add(1)
	go r.loop()
	return nil
}

// Close stops taking input, ends every session and waits for the lanes to finish
// their writes.
func (r *Router) Close(ctx context.Context) error {
	select {
	case <-r.done:
		return nil
	default:
	}
	closed := make(chan struct{})
	if r.do(func() {
		close(r.done)
		r.cancel()
		close(closed)
	}) != nil {
		return nil
	}
	<-closed
	wait := make(chan struct{})
	go func() { r.wg.Wait(); close(wait) }()
	select {
	case <-wait:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("router: close: %w", ctx.Err())
	}
}

func (r *Router) loop() {
	defer r.wg.Done()
	for {
		select {
		case f := <-r.cmds:
			f()
		case <-r.done:
			return
		}
	}
}

// do runs f on the router goroutine without waiting for it.
func (r *Router) do(f func()) error {
	select {
	case <-r.done:
		return chat.ErrClosed
	case r.cmds <- f:
		return nil
	}
}

// call runs f on the router goroutine and waits for it.
func (r *Router) call(ctx context.Context, f func() error) error {
	errc := make(chan error, 1)
	if err := r.do(func() { errc <- f() }); err != nil {
		return err
	}
	// Wait for f even when ctx ends: the router goroutine runs it shortly, and
	// the caller reads what f wrote. Only a closed router, which never runs the
	// commands still queued, ends the wait without f.
	select {
	case err := <-errc:
		return err
	case <-r.done:
		select {
		case err := <-errc:
			return err
		default:
			return chat.ErrClosed
		}
	}
}

// Subscribe registers a connection on a route and returns the thread the route
// shows now (nil when it has none yet). The route table and the hub change
// together on the router goroutine, so no attach can slip between the two.
func (r *Router) Subscribe(ctx context.Context, route chat.RouteKey, buffer int) (*fanout.Sub, *chat.Thread, error) {
	var sub *fanout.Sub
	var th *chat.Thread
	var remote chat.ThreadID
	err := r.call(ctx, func() error {
		id := r.routes[route]
		sub = r.fanout.Subscribe(route, id, buffer)
		if id == "" {
			return nil
		}
		if rm := r.opt.Remote; rm != nil && rm.Owns(id) {
			remote = id // read below: its machine may take seconds to answer
			return nil
		}
		t, err := r.store.Thread(ctx, id)
		if err != nil {
			r.fanout.Unsubscribe(sub)
			return err
		}
		th = &t
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if remote != "" {
		// Off the router goroutine, which every other route's send waits
		// for. A route moved meanwhile reaches sub as a switch, as any move
		// after Subscribe does.
		t, err := r.opt.Remote.Thread(ctx, remote)
		if err != nil {
			// Its machine does not answer: the route shows no thread
			// (rather than no connection) until it picks one.
			r.log.Info("router: a route's thread is on a machine that does not answer", "route", route.String(), "thread", remote, "err", err)
			return sub, nil, nil
		}
		th = &t
	}
	return sub, th, nil
}

// SendRequest is one message from any channel: the socket, REST or a plugin.
type SendRequest struct {
	From chat.RouteKey
	// Thread, when set, addresses a thread directly (REST) instead of the route's.
	Thread  chat.ThreadID
	Message Message
	// Notify, when set, receives each receipt of this message as it happens.
	// It must not block.
	Notify func(chat.Delivery)
	// Failed, when set, records the message in Thread as failed with this
	// reason, never handed to the agent: a message another machine could not
	// bring here (a cluster's hub, docs/multi-machine.md), kept in the log
	// where the person sees it and can send it again. A message the route
	// already sent stays as it is.
	Failed string
}

// Send is the one send path. It applies the message's intent, then hands the
// message to its thread's lane, which persists it before this returns "queued".
// A message id is the sending route's: one the route used before is never
// delivered twice (its current receipt is returned with chat.ErrDuplicate)
// unless its delivery failed, when sending it again is a retry; another
// route's message with the same id is a message of its own.
func (r *Router) Send(ctx context.Context, req SendRequest) (chat.Delivery, chat.ThreadID, error) {
	if err := req.Message.Validate(); err != nil {
		return chat.Delivery{}, "", err
	}
	reply := make(chan sendReply, 1)
	err := r.do(func() { r.route(ctx, req, reply) })
	if err != nil {
		return chat.Delivery{}, "", err
	}
	select {
	case rep := <-reply:
		return rep.delivery, rep.thread, rep.err
	case <-ctx.Done():
		return chat.Delivery{}, "", ctx.Err()
	}
}

type sendReply struct {
	delivery chat.Delivery
	thread   chat.ThreadID
	err      error
}

// route runs on the router goroutine.
func (r *Router) route(ctx context.Context, req SendRequest, reply chan<- sendReply) {
	m := req.Message
	marks.End("router", m.MessageID, marks.Start())
	fail := func(err error) { reply <- sendReply{err: err} }
	// The one size limit, here where every channel's messages arrive.
	if n := messageSize(m); n > r.opt.MaxMessageBytes {
		fail(fmt.Errorf("%w: %d bytes is larger than the limit of %d bytes (limits.max_message_bytes)",
			chat.ErrTooLarge, n, r.opt.MaxMessageBytes))
		return
	}
	var wish *startWish
	if w, ok := r.startOn[req.From]; ok && req.Thread == "" && m.Intent == nil && req.Failed == "" {
		if w.sending {
			// Two first messages would make two threads there.
			fail(startingErr(w.intent.Node))
			return
		}
		// The thread asked for on another machine (NewThread) starts now.
		wish, w.sending = w, true
		nw := w.intent
		m.Intent = &Intent{New: &nw}
		req.Message = m
	}
	if thread, ok, err := r.remoteTarget(req); err != nil || ok {
		// Not kept here: the owning machine stores it and knows its id again.
		if err != nil {
			fail(err)
			return
		}
		r.sendRemote(ctx, req, thread, wish, reply)
		return
	}
	key := inputKey{req.From, m.MessageID}
	in, err := r.store.Input(ctx, req.From, m.MessageID)
	if req.Failed != "" && (req.Thread == "" || m.Intent != nil) {
		fail(invalid("a failed message is recorded in its thread, with no intent"))
		return
	}
	switch {
	case err == nil && in.State == chat.DeliveryFailed && req.Failed == "":
		// A retry: the same message, delivered again in its own thread. Its
		// text is the one first sent, so a retry cannot rewrite history.
		r.retry(ctx, in, req, reply)
		return
	case err == nil:
		reply <- sendReply{delivery: chat.Delivery{MessageID: in.MessageID, State: in.State, Detail: in.Detail}, thread: in.ThreadID, err: chat.ErrDuplicate}
		return
	case !errors.Is(err, chat.ErrNotFound):
		fail(err)
		return
	case r.recent.has(key):
		// Handed to a lane a moment ago and not stored yet.
		reply <- sendReply{delivery: chat.Delivery{MessageID: m.MessageID, State: chat.DeliveryQueued}, err: chat.ErrDuplicate}
		return
	}
	var id chat.ThreadID
	switch {
	case req.Thread != "":
		if _, err = r.store.Thread(ctx, req.Thread); err == nil {
			id = req.Thread
		}
	case m.Intent != nil && m.Intent.New != nil:
		nw := m.Intent.New
		id, err = r.askedThread(ctx, req.From, nw.Ask)
		if err == nil && id == "" {
			id, err = r.newThread(ctx, req.From, firstNonEmpty(nw.Agent, m.Agent), nw.Cwd, "", m.Mode, nw.Ask, gitWish{worktree: nw.Worktree, title: m.Text})
		}
	case m.Intent != nil && m.Intent.Resume != nil:
		ri := m.Intent.Resume
		id, err = r.resumeThread(ctx, req.From, ri.Agent, ri.SessionID, ri.Cwd)
	default:
		id, err = r.currentThread(ctx, req.From, m.Agent, m.Mode)
	}
	if err != nil {
		fail(err)
		return
	}
	l, err := r.lane(ctx, id)
	if err != nil {
		fail(err)
		return
	}
	r.recent.add(key)
	in = chat.Input{
		MessageID: m.MessageID, ThreadID: id, From: req.From, Text: m.Text,
		State: chat.DeliveryQueued, AcceptedAt: r.opt.Now(),
	}
	actor := actorOf(ctx, req.From)
	l.accept(&pendingInput{in: in, images: m.Images, files: m.Files, notify: req.Notify, failed: req.Failed, origin: m.Origin}, func(d chat.Delivery, err error) {
		if err == nil && req.Failed == "" {
			r.recordSent(actor, in, m.Origin, false)
		}
		if err == nil || errors.Is(err, chat.ErrDuplicate) {
			reply <- sendReply{delivery: d, thread: id, err: err}
			return
		}
		// Refused (busy, store error): forget the id before answering, so the
		// client's retry is a fresh attempt, not a "duplicate".
		if r.do(func() { r.recent.remove(key); reply <- sendReply{delivery: d, thread: id, err: err} }) != nil {
			reply <- sendReply{delivery: d, thread: id, err: err}
		}
	})
}

// retry hands a failed message to its thread's lane again.
func (r *Router) retry(ctx context.Context, in chat.Input, req SendRequest, reply chan<- sendReply) {
	l, err := r.lane(ctx, in.ThreadID)
	if err != nil {
		reply <- sendReply{err: err}
		return
	}
	in.State, in.Detail, in.AcceptedAt = chat.DeliveryQueued, "", r.opt.Now()
	actor := actorOf(ctx, req.From)
	l.accept(&pendingInput{in: in, images: req.Message.Images, files: req.Message.Files, notify: req.Notify, retry: true}, func(d chat.Delivery, err error) {
		if err == nil {
			r.recordSent(actor, in, nil, true)
		}
		reply <- sendReply{delivery: d, thread: in.ThreadID, err: err}
	})
}

// currentThread returns the route's thread, making one with the default agent when
// the route has none, or a new one when the message selects another agent.
func (r *Router) currentThread(ctx context.Context, from chat.RouteKey, agent, mode string) (chat.ThreadID, error) {
	id := r.routes[from]
	if id != "" {
		th, err := r.store.Thread(ctx, id)
		if err != nil {
			return "", err
		}
		if agent == "" || agent == th.Agent {
			return id, nil
		}
		return r.newThread(ctx, from, agent, th.Cwd, "", mode, "", gitWish{})
	}
	return r.newThread(ctx, from, agent, "", "", mode, "", gitWish{})
}

func (r *Router) agent(id string) (config.Agent, error) {
	if id == "" {
		id = r.opt.DefaultAgent
	}
	for _, a := range r.opt.Agents {
		if a.ID == id {
			if _, ok := r.opt.Drivers[a.Transport]; !ok {
				return config.Agent{}, fmt.Errorf("agent %q: transport %q is not available in this build", id, a.Transport)
			}
			return a, nil
		}
	}
	if id == "" {
		return config.Agent{}, fmt.Errorf("%w: no agents are configured (install claude or gemini, or add [[agent]] to the config)", chat.ErrUnknownAgent)
	}
	return config.Agent{}, fmt.Errorf("%w %q", chat.ErrUnknownAgent, id)
}

// newThread makes a thread for from, for the hub's ask ask when not "".
func (r *Router) newThread(ctx context.Context, from chat.RouteKey, agentID, cwd, sessionID, mode, ask string, wish gitWish) (chat.ThreadID, error) {
	a, err := r.agent(agentID)
	if err != nil {
		return "", err
	}
	if cwd == "" {
		if len(a.Roots) == 0 {
			return "", errors.New("no working directory: configure a root")
		}
		cwd = a.Roots[0]
	}
	dir, err := config.Confine(cwd, a.Roots)
	if err != nil {
		return "", err // a directory not allowed is a chat.ErrOutsideRoot saying how to allow it
	}
	if !r.threads.AllowN(r.opt.Now(), 1) {
		return "", fmt.Errorf("%w: more than %d new threads in a minute (limits.threads_per_minute); wait a moment",
			chat.ErrRateLimited, r.opt.ThreadsPerMinute)
	}
	now := r.opt.Now()
	th := chat.Thread{
		ID: chat.NewThreadID(), Agent: a.ID, Cwd: dir, SessionID: sessionID,
		State: chat.ThreadUnloaded, Mode: firstNonEmpty(mode, a.Mode), CreatedAt: now, UpdatedAt: now,
	}
	wish.worktree = wish.worktree || (a.Worktree && sessionID == "")
	if err := r.gitStart(ctx, &th, a, wish); err != nil {
		return "", err
	}
	if err := r.store.Commit(ctx, store.Batch{Thread: &th, Ask: ask}); err != nil {
		r.gitUndo(th)
		return "", fmt.Errorf("router: create thread: %w", err)
	}
	r.opt.Metrics.Threads.Inc()
	return th.ID, r.attach(ctx, from, th.ID)
}

// askedThread is the thread a hub's ask made here before (ask "": none),
// attached to from: the hub asks again when it did not hear the answer (it
// was killed, or gave up waiting), and the same ask must not make a second
// thread. "" when the ask made none yet, or its thread was deleted since.
func (r *Router) askedThread(ctx context.Context, from chat.RouteKey, ask string) (chat.ThreadID, error) {
	if ask == "" {
		return "", nil
	}
	id, err := r.store.AskThread(ctx, ask)
	if errors.Is(err, chat.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("router: the thread of ask %s: %w", ask, err)
	}
	return id, r.attach(ctx, from, id)
}

func (r *Router) resumeThread(ctx context.Context, from chat.RouteKey, agentID, sessionID, cwd string) (chat.ThreadID, error) {
	threads, err := r.store.Threads(ctx)
	if err != nil {
		return "", err
	}
	for _, th := range threads {
		if th.Agent == agentID && th.SessionID == sessionID {
			return th.ID, r.attach(ctx, from, th.ID)
		}
	}
	return r.newThread(ctx, from, agentID, cwd, sessionID, "", "", gitWish{})
}

func (r *Router) attach(ctx context.Context, from chat.RouteKey, id chat.ThreadID) error {
	if r.routes[from] == id {
		return nil
	}
	if _, ok := r.deleting[id]; ok {
		return fmt.Errorf("thread %s: %w: it is being deleted", id, chat.ErrNotFound)
	}
	// A route on another machine's thread is kept apart: no thread of this
	// store is it.
	attach := r.store.AttachRoute
	if rm := r.opt.Remote; rm != nil && rm.Owns(id) {
		attach = r.store.AttachRemoteRoute
	}
	if err := attach(ctx, from, id); err != nil {
		return fmt.Errorf("router: attach route: %w", err)
	}
	r.routes[from] = id
	delete(r.startOn, from) // the route shows a thread now: an older wish is done
	r.fanout.Attach(from, id)
	return nil
}

// OpenThread attaches a route to an existing thread (a thread picked from the
// dashboard's list, on another tab or device).
func (r *Router) OpenThread(ctx context.Context, from chat.RouteKey, id chat.ThreadID) error {
	if err := validID("thread_id", string(id)); err != nil {
		return err
	}
	rm := r.opt.Remote
	remote := rm != nil && rm.Owns(id)
	if remote {
		// Asked off the router goroutine: its machine may take seconds.
		if _, err := rm.Thread(ctx, id); err != nil {
			return fmt.Errorf("thread %s: %w", id, err)
		}
	}
	return r.call(ctx, func() error {
		if !remote {
			if _, err := r.store.Thread(ctx, id); err != nil {
				return fmt.Errorf("thread %s: %w", id, err)
			}
		}
		if err := r.dropAsk(ctx, from); err != nil {
			return err
		}
		return r.attach(ctx, from, id)
	})
}

// NewThread makes a fresh thread for a route (the REST and TUI "new" without a message).
//
// On a cluster's hub, agent may name a machine, "agent@node" (as the IM
// plugins' and `parley acp`'s agent lists show every machine's agents). A
// thread on another machine is made there with its first message (what a
// node takes is a message, checked against its own agents and roots): it
// returns "" and the route's next message starts it, with agent and cwd.
func (r *Router) NewThread(ctx context.Context, from chat.RouteKey, agent, cwd string) (chat.ThreadID, error) {
	var id chat.ThreadID
	err := r.call(ctx, func() error {
		if err := r.dropAsk(ctx, from); err != nil {
			return err
		}
		if a, node, ok := strings.Cut(agent, "@"); ok {
			switch rm := r.opt.Remote; {
			case rm == nil:
				return invalid("agent %q: this parley is not a cluster's hub, it has no machine %q", agent, node)
			case node != rm.Local():
				return r.keepAsk(ctx, from, NewIntent{Agent: a, Cwd: cwd, Node: node})
			}
			agent = a
		}
		var err error
		id, err = r.newThread(ctx, from, agent, cwd, "", "", "", gitWish{})
		return err
	})
	return id, err
}

// KeptAsks lists the routes whose kept ask waits for a thread on node
// (route → ask id), leaving out those whose first message is on its way.
func (r *Router) KeptAsks(ctx context.Context, node string) (map[chat.RouteKey]string, error) {
	out := map[chat.RouteKey]string{}
	err := r.call(ctx, func() error {
		for from, w := range r.startOn {
			if w.intent.Node == node && w.intent.Ask != "" && !w.sending {
				out[from] = w.intent.Ask
			}
		}
		return nil
	})
	return out, err
}

// AskAnswered shows from the thread its ask made on another machine, when
// from still keeps that ask: a hub that restarted before it heard the
// machine's answer learns it from the machine (the thread is there, made
// once) without waiting for the chat's next message.
func (r *Router) AskAnswered(ctx context.Context, from chat.RouteKey, ask string, thread chat.ThreadID) error {
	return r.call(ctx, func() error {
		if w, ok := r.startOn[from]; !ok || w.sending || w.intent.Ask != ask {
			return nil // answered meanwhile, or asked anew
		}
		return r.attach(ctx, from, thread)
	})
}

// keepAsk keeps from's ask for a new thread on another machine, in the
// store first (a restart keeps it), then in startOn. The ask takes an id of
// its own, which every message carrying it sends along: the machine makes
// one thread for it, however often it is asked.
func (r *Router) keepAsk(ctx context.Context, from chat.RouteKey, in NewIntent) error {
	in.Ask = chat.NewID("ask")
	if err := r.store.SetRouteAsk(ctx, store.RouteAsk{Key: from, Agent: in.Agent, Cwd: in.Cwd, Node: in.Node, AskID: in.Ask}); err != nil {
		return fmt.Errorf("router: %w", err)
	}
	r.startOn[from] = &startWish{intent: in}
	return nil
}

// dropAsk drops from's ask, if it has one, from the store and startOn.
func (r *Router) dropAsk(ctx context.Context, from chat.RouteKey) error {
	if _, ok := r.startOn[from]; !ok {
		return nil
	}
	if err := r.store.DropRouteAsk(ctx, from); err != nil {
		return fmt.Errorf("router: %w", err)
	}
	delete(r.startOn, from)
	return nil
}

// lane returns a thread's lane, starting it on first use.
func (r *Router) lane(ctx context.Context, id chat.ThreadID) (*lane, error) {
	if l := r.lanes[id]; l != nil {
		return l, nil
	}
	if _, ok := r.deleting[id]; ok {
		return nil, fmt.Errorf("thread %s: %w: it is being deleted", id, chat.ErrNotFound)
	}
	th, err := r.store.Thread(ctx, id)
	if err != nil {
		return nil, err
	}
	l := r.newLane(th)
	r.startLane(l)
	return l, nil
}

func (r *Router) startLane(l *lane) {
	r.lanes[l.th.ID] = l
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		l.run()
	}()
}

// Control runs a control on the thread's lane and waits for its verdict (not for
// the agent: a stop returns once the agent has been told).
func (r *Router) Control(ctx context.Context, c Control) error {
	if err := c.Validate(); err != nil {
		return err
	}
	c.actor = actorOf(ctx, c.From)
	var l *lane
	var remote chat.ThreadID
	err := r.call(ctx, func() error {
		id := c.Thread
		if id == "" {
			id = r.routes[c.From]
		}
		if id == "" {
			return fmt.Errorf("%w: this chat has no thread yet", chat.ErrNoTurn)
		}
		if rm := r.opt.Remote; rm != nil && rm.Owns(id) {
			remote = id
			return nil
		}
		var err error
		l, err = r.lane(ctx, id)
		return err
	})
	if err != nil {
		return err
	}
	if remote != "" {
		c.Thread = remote
		return r.opt.Remote.Control(ctx, c)
	}
	return l.control(ctx, c)
}

// ThreadOf returns the thread a route shows ("" when none).
func (r *Router) ThreadOf(ctx context.Context, route chat.RouteKey) (chat.ThreadID, error) {
	var id chat.ThreadID
	err := r.call(ctx, func() error { id = r.routes[route]; return nil })
	return id, err
}

// Agents lists the configured agents with their live status.
func (r *Router) Agents() []chat.AgentInfo {
	out := make([]chat.AgentInfo, 0, len(r.opt.Agents))
	for _, a := range r.opt.Agents {
		status := "ready"
		if _, ok := r.opt.Drivers[a.Transport]; !ok {
			status = "unavailable" // configured, but this build has no such transport
		}
		out = append(out, chat.AgentInfo{ID: a.ID, Name: a.Name, Transport: a.Transport, Status: status, Roots: a.Roots})
	}
	return out
}

// LiveSessions lists the agent sessions that hold a slot (starting, live or
// exiting), oldest first.
func (r *Router) LiveSessions() []chat.LiveSession {
	out := r.slots.list()
	slices.SortFunc(out, func(a, b chat.LiveSession) int { return a.Since.Compare(b.Since) })
	return out
}

// DefaultAgent is the agent a route gets when it names none.
func (r *Router) DefaultAgent() string { return r.opt.DefaultAgent }

// Driver returns the driver and agent config behind an agent id.
func (r *Router) Driver(agentID string) (driver.Driver, config.Agent, error) {
	a, err := r.agent(agentID)
	if err != nil {
		return nil, config.Agent{}, err
	}
	return r.opt.Drivers[a.Transport], a, nil
}

// messageSize is what limits.max_message_bytes counts: the text, the images
// and the files.
func messageSize(m Message) int {
	n := len(m.Text)
	for _, im := range m.Images {
		n += len(im.Data)
	}
	for _, f := range m.Files {
		n += len(f.Data)
	}
	return n
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// inputKey names a message: its id is unique on the route that sent it.
type inputKey struct {
	from chat.RouteKey
	id   string
}

// recentIDs remembers messages handed to lanes but perhaps not yet stored, so a
// retry that races its first copy is still caught. Owned by the router goroutine.
type recentIDs struct {
	set  map[inputKey]struct{}
	ring []inputKey
	next int
}

func newRecentIDs(n int) *recentIDs {
	return &recentIDs{set: make(map[inputKey]struct{}, n), ring: make([]inputKey, n)}
}

func (s *recentIDs) has(k inputKey) bool { _, ok := s.set[k]; return ok }

func (s *recentIDs) remove(k inputKey) { delete(s.set, k) }

func (s *recentIDs) add(id inputKey) {
	if old := s.ring[s.next]; old != (inputKey{}) {
		delete(s.set, old)
	}
	s.ring[s.next] = id
	s.set[id] = struct{}{}
	s.next = (s.next + 1) % len(s.ring)
}
