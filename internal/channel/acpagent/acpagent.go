// Package acpagent is parley playing the agent side of the Agent Client Protocol
// (JSON-RPC over any reader/writer pair). Every outside surface that speaks ACP
// as a client (an IM plugin process, an editor running `parley acp`) talks to
// hosted agents through it.
//
// An ACP session is a route (channel kind, chat id): it subscribes to the hub like
// a browser chat, replays the thread's log from the store and then follows it
// live, so what the client is shown is what every other surface is shown.
// docs/plugin-protocol.md is the contract.
package acpagent

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/follow"
	"github.com/parleyhq/parley/internal/router"
)

// Router is what the agent side needs of the router.
type Router interface {
	Send(ctx context.Context, req router.SendRequest) (chat.Delivery, chat.ThreadID, error)
	Control(ctx context.Context, c router.Control) error
	follow.Subscriber
	NewThread(ctx context.Context, from chat.RouteKey, agent, cwd string) (chat.ThreadID, error)
	OpenThread(ctx context.Context, from chat.RouteKey, id chat.ThreadID) error
	ThreadOf(ctx context.Context, route chat.RouteKey) (chat.ThreadID, error)
	Agents() []chat.AgentInfo
}

// Store is what the agent side reads: what a follower reads (threads, logs,
// open cards) and the routes.
type Store interface {
	follow.Source
	Routes(ctx context.Context) ([]chat.Route, error)
}

// Deps are the daemon's parts the agent side uses.
type Deps struct {
	Router Router
	Store  Store
	Hub    follow.Hub
}

// Meta keys parley reads from and writes into ACP `_meta` objects.
const (
	MetaConfig    = "parley/config"     // initialize result: the plugin's own config section
	MetaAgents    = "parley/agents"     // initialize result: the configured agents
	MetaChat      = "parley/chat"       // session/new params: the platform chat id to use as the route's chat
	MetaUser      = "parley/user"       // session/prompt params: the platform user who wrote
	MetaAccount   = "parley/account"    // session/prompt params: the account the platform says that user is logged in as (IRC services), when it has one
	MetaThread    = "parley/thread"     // session/new and load results: the thread the route shows
	MetaNotice    = "parley/notice"     // agent_message_chunk: parley's own answer (a command, a refusal), not the agent's
	MetaRequestID = "parley/request_id" // request_permission and elicitation: the card's request id
)

// Gate looks at a prompt before anything reaches an agent: who wrote it, and
// whether it is a chat command. Handled prompts are answered with Reply (as a
// notice) and never sent to the agent.
type Gate func(ctx context.Context, p GateRequest) GateReply

// GateRequest is one prompt the gate is asked about.
type GateRequest struct {
	Route   chat.RouteKey
	User    string // from the prompt's _meta "parley/user" ("" for editors)
	Account string // from the prompt's _meta "parley/account" ("" when none)
	Text    string
}

// GateReply is the gate's verdict.
type GateReply struct {
	Handled bool
	Reply   string
}

// Options configure one ACP connection.
type Options struct {
	// Channel is the channel kind of the routes this connection's sessions use
	// ("acp" for editors, the plugin id for a plugin).
	Channel string
	// Agent is the agent new sessions use ("" = the default agent).
	Agent string
	// Thread, when set, is the thread new sessions attach to.
	Thread chat.ThreadID
	// Config is handed to the client in initialize's _meta (a plugin's section).
	Config map[string]any
	// Buffer bounds how far a session may fall behind the hub (default 4096).
	Buffer  int
	Gate    Gate
	Version string
	Logger  *slog.Logger
	// Heartbeat, when set, pings the client (`_parley/ping`) at this interval;
	// a client that does not answer within it again is gone: Serve returns
	// ErrNoHeartbeat. Any answer, an error included, proves it alive.
	Heartbeat time.Duration
	// OnHeartbeat is told each time the client answered a ping.
	OnHeartbeat func(time.Time)
	// Cursors, when set, remember how far each route was sent, across
	// connections: a client that comes back (a restarted plugin) is first sent
	// what it missed of its thread, not only what is open.
	Cursors *Cursors
}

// Cursors remember, per route, the thread and the last seq sent to a client.
// Safe for concurrent use. They live as long as their owner (the plugin host
// keeps one per plugin across restarts).
//
// Sent is not received: what went down the pipe before a connection broke may
// never have been read, and a plugin that hangs is noticed only after a
// heartbeat or two. So each answered `_parley/ping` confirms what was sent
// before it (the pipe is ordered: the client read the ping after everything
// written before it), and when a connection ends each of its routes' cursors
// goes back to the last confirmed position: a client that comes back gets the
// rest again (at least once, never lost). Without heartbeats nothing is
// confirmed, and a cursor goes back by what was sent in the last Unconfirmed.
type Cursors struct {
	mu sync.Mutex
	m  map[chat.RouteKey]*cursor
}

// Unconfirmed is how far back a cursor goes when its connection ends, for a
// connection without heartbeats.
const Unconfirmed = 2 * time.Second

type cursor struct {
	thread    chat.ThreadID
	seq       int64   // the last sent
	confirmed int64   // the last the client is known to have read, of thread
	recent    []stamp // what was sent lately, oldest first
}

type stamp struct {
	seq int64
	at  time.Time
}

// position is a route's cursor at one moment.
type position struct {
	thread chat.ThreadID
	seq    int64
}

// NewCursors returns an empty set.
func NewCursors() *Cursors { return &Cursors{m: map[chat.RouteKey]*cursor{}} }

func (c *Cursors) get(r chat.RouteKey) (cursor, bool) {
	if c == nil {
		return cursor{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[r]
	if !ok {
		return cursor{}, false
	}
	return cursor{thread: v.thread, seq: v.seq, confirmed: v.confirmed}, true
}

func (c *Cursors) set(r chat.RouteKey, thread chat.ThreadID, seq int64, now time.Time) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	v := c.m[r]
	if v == nil || v.thread != thread {
		// A thread newly shown: what came before seq was never to be sent.
		v = &cursor{thread: thread, confirmed: seq - 1}
		c.m[r] = v
	}
	v.seq = seq
	v.recent = append(v.recent, stamp{seq, now})
	i := 0
	for i < len(v.recent)-1 && now.Sub(v.recent[i].at) > 2*Unconfirmed {
		i++
	}
	v.recent = v.recent[i:]
}

// mark is every route's position now: taken before a ping is written, it is
// what the ping's answer confirms.
func (c *Cursors) mark() map[chat.RouteKey]position {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[chat.RouteKey]position, len(c.m))
	for r, v := range c.m {
		out[r] = position{v.thread, v.seq}
	}
	return out
}

// confirm records that the client read everything up to the marked positions.
func (c *Cursors) confirm(marked map[chat.RouteKey]position) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for r, p := range marked {
		if v := c.m[r]; v != nil && v.thread == p.thread && p.seq > v.confirmed {
			v.confirmed = p.seq
		}
	}
}

// rewind moves a route's cursor back, when its connection ended at end: to
// the last confirmed position on a connection with heartbeats, else before
// what was sent after end-Unconfirmed.
func (c *Cursors) rewind(r chat.RouteKey, end time.Time, heartbeats bool) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	v := c.m[r]
	if v == nil {
		return
	}
	if heartbeats {
		v.seq = min(v.seq, v.confirmed)
		v.recent = nil
		return
	}
	for _, st := range v.recent {
		if !st.at.Before(end.Add(-Unconfirmed)) {
			v.seq = st.seq - 1
			break
		}
	}
	v.recent = nil
}

// ErrNoHeartbeat says the client stopped answering pings.
var ErrNoHeartbeat = errors.New("acp: the client stopped answering pings")

// Serve speaks ACP as the agent on r/w until the peer goes away or ctx ends.
func Serve(ctx context.Context, d Deps, opt Options, r io.Reader, w io.Writer) error {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Buffer <= 0 {
		opt.Buffer = 4096
	}
	if opt.Channel == "" {
		opt.Channel = "acp"
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	a := &agent{d: d, opt: opt, log: opt.Logger, sessions: map[string]*session{}}
	a.spawnCtx = func() (context.Context, context.CancelFunc) { return context.WithCancel(ctx) }
	// The SDK starts reading in NewAgentSideConnection and SetLogger is not
	// synchronised with that: hold the reader until the logger is set.
	held := &heldReader{r: r, open: make(chan struct{})}
	a.conn = acp.NewAgentSideConnection(a, w, held)
	a.conn.SetLogger(opt.Logger.With("acp", opt.Channel))
	close(held.open)
	a.done = a.conn.Done()
	var result error
	var tick <-chan time.Time
	if opt.Heartbeat > 0 {
		t := time.NewTicker(opt.Heartbeat)
		defer t.Stop()
		tick = t.C
	}
wait:
	for {
		select {
		case <-a.conn.Done():
			break wait
		case <-ctx.Done():
			break wait
		case <-tick:
			if !a.ping(ctx, opt.Heartbeat) {
				if ctx.Err() == nil {
					result = ErrNoHeartbeat
				}
				break wait
			}
		}
	}
	cancel()
	a.mu.Lock()
	a.closed = true
	for _, s := range a.sessions {
		s.cancel()
	}
	a.mu.Unlock()
	a.wg.Wait()
	end := time.Now()
	a.mu.Lock()
	for _, s := range a.sessions {
		s.f.Close()
		opt.Cursors.rewind(s.route, end, opt.Heartbeat > 0)
	}
	a.mu.Unlock()
	return result
}

// ping asks the client for a sign of life within timeout. An answer also
// confirms the cursors' positions from before the ping was written.
func (a *agent) ping(ctx context.Context, timeout time.Duration) bool {
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	marked := a.opt.Cursors.mark()
	_, err := a.conn.CallExtension(pctx, "_parley/ping", map[string]any{})
	select {
	case <-a.conn.Done():
		return false
	default:
	}
	if err != nil && pctx.Err() != nil {
		return false
	}
	// An error answer is a sign of life too, but only the client's own answer
	// proves it read the ping: -32603 may be the SDK's report of a failed write.
	var rerr *acp.RequestError
	if err == nil || (errors.As(err, &rerr) && rerr.Code != -32603) {
		a.opt.Cursors.confirm(marked)
	}
	if a.opt.OnHeartbeat != nil {
		a.opt.OnHeartbeat(time.Now())
	}
	return true
}

type agent struct {
	d    Deps
	opt  Options
	log  *slog.Logger
	conn *acp.AgentSideConnection
	done <-chan struct{}
	// spawnCtx gives a session's goroutines a context that lives as long as the
	// connection (handlers' contexts end with their request).
	spawnCtx func() (context.Context, context.CancelFunc)
	wg       sync.WaitGroup

	mu       sync.Mutex
	caps     acp.ClientCapabilities
	sessions map[string]*session
	closed   bool // Serve is ending: no new sessions

	threadMu sync.Mutex                  // one thread made at a time for a route without one
	modeOf   map[chat.ThreadID]chat.Mode // each thread's newest mode event seen (a.mu)
}

var (
	_ acp.Agent       = (*agent)(nil)
	_ acp.AgentLoader = (*agent)(nil)
)

func (a *agent) Initialize(ctx context.Context, p acp.InitializeRequest) (acp.InitializeResponse, error) {
	a.mu.Lock()
	a.caps = p.ClientCapabilities
	a.mu.Unlock()
	meta := map[string]any{MetaAgents: a.d.Router.Agents()}
	if a.opt.Config != nil {
		meta[MetaConfig] = a.opt.Config
	}
	return acp.InitializeResponse{
		ProtocolVersion: acp.ProtocolVersionNumber,
		AgentCapabilities: acp.AgentCapabilities{
			LoadSession:         true,
			PromptCapabilities:  acp.PromptCapabilities{Image: true, EmbeddedContext: true},
			SessionCapabilities: acp.SessionCapabilities{List: &acp.SessionListCapabilities{}, Resume: &acp.SessionResumeCapabilities{}, Close: &acp.SessionCloseCapabilities{}},
		},
		AgentInfo:   &acp.Implementation{Name: "parley", Version: a.opt.Version},
		AuthMethods: []acp.AuthMethod{},
		Meta:        meta,
	}, nil
}

func (a *agent) Authenticate(context.Context, acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	return acp.AuthenticateResponse{}, nil
}

func (a *agent) NewSession(ctx context.Context, p acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	chatID, _ := p.Meta[MetaChat].(string)
	if chatID == "" {
		chatID = chat.NewID("acp")
	} else if err := validChat(chatID); err != nil {
		return acp.NewSessionResponse{}, acp.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	route := chat.RouteKey{Channel: a.opt.Channel, Chat: chatID}
	cur, err := a.d.Router.ThreadOf(ctx, route)
	if err != nil {
		return acp.NewSessionResponse{}, rpcErr(err)
	}
	plugin := p.Meta[MetaChat] != nil
	var later *laterThread
	switch {
	case a.opt.Thread != "" && cur != a.opt.Thread:
		if err := a.d.Router.OpenThread(ctx, route, a.opt.Thread); err != nil {
			return acp.NewSessionResponse{}, rpcErr(err)
		}
	case cur == "" && a.opt.Gate != nil:
		// Who writes is only known at the first prompt, and a stranger must
		// leave nothing behind: the thread is made when a prompt has passed
		// the gate (ensureThread).
		later = &laterThread{cwd: p.Cwd, plugin: plugin}
	case cur == "":
		id, err := a.newThread(ctx, route, p.Cwd, plugin)
		if err != nil {
			return acp.NewSessionResponse{}, rpcErr(err)
		}
		if id == "" {
			// On another machine (agent@node at a cluster's hub): the
			// first prompt makes it there, and the session follows it.
			later = &laterThread{cwd: p.Cwd, plugin: plugin}
		}
	}
	// A new session on a route that already shows a thread (a plugin back after
	// a restart) is not replayed its history, only what is open now.
	th, err := a.open(ctx, route, false, later)
	if err != nil {
		return acp.NewSessionResponse{}, rpcErr(err)
	}
	if th.ID == "" {
		return acp.NewSessionResponse{SessionId: acp.SessionId(chatID)}, nil
	}
	return acp.NewSessionResponse{SessionId: acp.SessionId(chatID), Modes: a.modes(ctx, th), Meta: map[string]any{MetaThread: th.ID}}, nil
}

// newThread makes a thread for route with the connection's agent. The client's
// cwd is used when it lies inside a root; a plugin's chat has no directory and
// gets the agent's first root.
func (a *agent) newThread(ctx context.Context, route chat.RouteKey, cwd string, plugin bool) (chat.ThreadID, error) {
	id, err := a.d.Router.NewThread(ctx, route, a.opt.Agent, cwd)
	if err != nil && errors.Is(err, chat.ErrOutsideRoot) && plugin {
		id, err = a.d.Router.NewThread(ctx, route, a.opt.Agent, "")
	}
	return id, err
}

// ensureThread gives a session whose route shows no thread yet (a plugin
// chat's first prompt that passed the gate) its thread, and waits until the
// session follows it, so nothing the message causes is missed.
func (a *agent) ensureThread(ctx context.Context, s *session) error {
	if s.later == nil {
		return nil // the route had a thread when the session opened
	}
	a.threadMu.Lock()
	id, err := a.d.Router.ThreadOf(ctx, s.route)
	made := false
	if err == nil && id == "" {
		id, err = a.newThread(ctx, s.route, s.later.cwd, s.later.plugin)
		made = err == nil
	}
	a.threadMu.Unlock()
	if err != nil || !made {
		return err
	}
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	for {
		shown, ch := s.showing()
		if shown == id {
			return nil
		}
		select {
		case <-ch:
		case <-t.C:
			a.log.Warn("acp: the session did not follow its new thread in time", "session", s.id, "thread", id)
			return nil
		case <-a.done:
			return chat.ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (a *agent) LoadSession(ctx context.Context, p acp.LoadSessionRequest) (acp.LoadSessionResponse, error) {
	route := chat.RouteKey{Channel: a.opt.Channel, Chat: string(p.SessionId)}
	id, err := a.d.Router.ThreadOf(ctx, route)
	if err != nil {
		return acp.LoadSessionResponse{}, rpcErr(err)
	}
	if id == "" {
		return acp.LoadSessionResponse{}, acp.NewInvalidParams(map[string]any{"error": fmt.Sprintf("no session %q", p.SessionId)})
	}
	th, err := a.open(ctx, route, true, nil)
	if err != nil {
		return acp.LoadSessionResponse{}, rpcErr(err)
	}
	return acp.LoadSessionResponse{Modes: a.modes(ctx, th), Meta: map[string]any{MetaThread: th.ID}}, nil
}

func (a *agent) ResumeSession(ctx context.Context, p acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	route := chat.RouteKey{Channel: a.opt.Channel, Chat: string(p.SessionId)}
	id, err := a.d.Router.ThreadOf(ctx, route)
	if err != nil {
		return acp.ResumeSessionResponse{}, rpcErr(err)
	}
	if id == "" {
		return acp.ResumeSessionResponse{}, acp.NewInvalidParams(map[string]any{"error": fmt.Sprintf("no session %q", p.SessionId)})
	}
	th, err := a.open(ctx, route, false, nil)
	if err != nil {
		return acp.ResumeSessionResponse{}, rpcErr(err)
	}
	return acp.ResumeSessionResponse{Modes: a.modes(ctx, th)}, nil
}

func (a *agent) CloseSession(ctx context.Context, p acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	a.mu.Lock()
	s := a.sessions[string(p.SessionId)]
	delete(a.sessions, string(p.SessionId))
	a.mu.Unlock()
	if s != nil {
		s.cancel()
		<-s.ended
		s.f.Close()
	}
	return acp.CloseSessionResponse{}, nil
}

func (a *agent) ListSessions(ctx context.Context, p acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	routes, err := a.d.Store.Routes(ctx)
	if err != nil {
		return acp.ListSessionsResponse{}, rpcErr(err)
	}
	out := []acp.SessionInfo{}
	for _, rt := range routes {
		if rt.Key.Channel != a.opt.Channel || rt.ThreadID == "" {
			continue
		}
		th, err := a.d.Store.Thread(ctx, rt.ThreadID)
		if err != nil {
			continue
		}
		if p.Cwd != nil && *p.Cwd != "" && *p.Cwd != th.Cwd {
			continue
		}
		info := acp.SessionInfo{SessionId: acp.SessionId(rt.Key.Chat), Cwd: th.Cwd,
			UpdatedAt: acp.Ptr(th.UpdatedAt.UTC().Format(chat.TimeFormat)), Meta: map[string]any{MetaThread: th.ID}}
		if th.Title != "" {
			info.Title = acp.Ptr(th.Title)
		}
		out = append(out, info)
	}
	return acp.ListSessionsResponse{Sessions: out}, nil
}

func (a *agent) Prompt(_ context.Context, p acp.PromptRequest) (acp.PromptResponse, error) {
	// The SDK ends a prompt's context when the next prompt of the same session
	// arrives (one turn per session, in ACP's model). parley queues instead: a
	// second message, a /stop or a card answer sent while a turn runs must
	// not cut the first one's hand-over short, so the message is handed over
	// on the connection's lifetime.
	ctx, cancel := a.spawnCtx()
	defer cancel()
	s := a.session(string(p.SessionId))
	if s == nil {
		return acp.PromptResponse{}, acp.NewInvalidParams(map[string]any{"error": fmt.Sprintf("no open session %q: call session/new or session/load first", p.SessionId)})
	}
	msg, err := promptMessage(p)
	if err != nil {
		return acp.PromptResponse{}, acp.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	if a.opt.Gate != nil {
		user, _ := p.Meta[MetaUser].(string)
		account, _ := p.Meta[MetaAccount].(string)
		if rep := a.opt.Gate(ctx, GateRequest{Route: s.route, User: user, Account: account, Text: msg.Text}); rep.Handled {
			if rep.Reply != "" {
				a.notice(ctx, s.id, rep.Reply)
			}
			return acp.PromptResponse{StopReason: acp.StopReasonEndTurn, Meta: map[string]any{MetaNotice: true}}, nil
		}
	}
	if err := a.ensureThread(ctx, s); err != nil {
		return acp.PromptResponse{}, rpcErr(err)
	}
	w := s.wait(msg.MessageID)
	defer s.unwait(msg.MessageID, w)
	d, _, err := a.d.Router.Send(ctx, router.SendRequest{From: s.route, Message: msg, Notify: func(d chat.Delivery) {
		if d.State == chat.DeliveryFailed || d.State == chat.DeliveryUnknown {
			w.ended(d)
		}
	}})
	switch {
	case errors.Is(err, chat.ErrAway):
		// Queued for a machine that is away: its turn's end comes later.
	case errors.Is(err, chat.ErrDuplicate):
		if d.State == chat.DeliveryFailed {
			return acp.PromptResponse{}, acp.NewInternalError(map[string]any{"error": "message failed: " + d.Detail})
		}
		if in := (chat.Input{State: d.State}); !in.Pending() {
			return acp.PromptResponse{StopReason: acp.StopReasonEndTurn, Meta: map[string]any{"parley/duplicate": true}}, nil
		}
	case err != nil:
		return acp.PromptResponse{}, rpcErr(err)
	}
	// The request's context ends on session/cancel; the turn's end is what we
	// answer with, so wait for it on the connection's lifetime instead.
	select {
	case out := <-w.ch:
		if out.failed != "" {
			return acp.PromptResponse{}, out.err()
		}
		return acp.PromptResponse{StopReason: stopReason(out.stop), UserMessageId: acp.Ptr(msg.MessageID)}, nil
	case <-a.done:
		return acp.PromptResponse{}, acp.NewInternalError(map[string]any{"error": "connection closed"})
	}
}

func (a *agent) Cancel(ctx context.Context, p acp.CancelNotification) error {
	s := a.session(string(p.SessionId))
	if s == nil {
		return nil
	}
	err := a.d.Router.Control(context.WithoutCancel(ctx), router.Control{From: s.route, Stop: true})
	if err != nil && !errors.Is(err, chat.ErrNoTurn) {
		a.log.Warn("acp: cancel", "session", s.id, "err", err)
	}
	return nil
}

func (a *agent) SetSessionMode(ctx context.Context, p acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	s := a.session(string(p.SessionId))
	if s == nil {
		return acp.SetSessionModeResponse{}, acp.NewInvalidParams(map[string]any{"error": "no open session"})
	}
	err := a.d.Router.Control(ctx, router.Control{From: s.route, SetMode: &router.SetMode{ModeID: string(p.ModeId)}})
	if err != nil {
		return acp.SetSessionModeResponse{}, rpcErr(err)
	}
	return acp.SetSessionModeResponse{}, nil
}

func (a *agent) SetSessionConfigOption(ctx context.Context, p acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	var sid, cfg, val string
	switch {
	case p.ValueId != nil:
		sid, cfg, val = string(p.ValueId.SessionId), string(p.ValueId.ConfigId), string(p.ValueId.Value)
	case p.Boolean != nil:
		sid, cfg, val = string(p.Boolean.SessionId), string(p.Boolean.ConfigId), fmt.Sprint(p.Boolean.Value)
	default:
		return acp.SetSessionConfigOptionResponse{}, acp.NewInvalidParams(map[string]any{"error": "no value"})
	}
	s := a.session(sid)
	if s == nil {
		return acp.SetSessionConfigOptionResponse{}, acp.NewInvalidParams(map[string]any{"error": "no open session"})
	}
	err := a.d.Router.Control(ctx, router.Control{From: s.route, SetOption: &router.SetOption{ConfigID: cfg, Value: val}})
	if err != nil {
		return acp.SetSessionConfigOptionResponse{}, rpcErr(err)
	}
	return acp.SetSessionConfigOptionResponse{}, nil
}

func (a *agent) session(id string) *session {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sessions[id]
}

func (a *agent) clientCaps() acp.ClientCapabilities {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.caps
}

// notice sends parley's own words to a session as an agent_message_chunk marked
// with _meta "parley/notice".
func (a *agent) notice(ctx context.Context, sid, text string) {
	u := acp.UpdateAgentMessageText(text)
	u.AgentMessageChunk.Meta = map[string]any{MetaNotice: true}
	if err := a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: acp.SessionId(sid), Update: u}); err != nil {
		a.log.Debug("acp: notice", "err", err)
	}
}

// promptMessage turns a prompt's content blocks into the router's message. It
// is refused here, by the router's own rules, before a thread is made for it.
func promptMessage(p acp.PromptRequest) (router.Message, error) {
	m := router.Message{}
	if p.MessageId != nil && *p.MessageId != "" {
		m.MessageID = *p.MessageId
	} else {
		m.MessageID = chat.NewID("m")
	}
	var parts []string
	for _, b := range p.Prompt {
		switch {
		case b.Text != nil:
			parts = append(parts, b.Text.Text)
		case b.Image != nil:
			data, err := base64.StdEncoding.DecodeString(b.Image.Data)
			if err != nil {
				return m, fmt.Errorf("image: data is not base64: %w", err)
			}
			m.Images = append(m.Images, router.Image{MIMEType: b.Image.MimeType, Data: data})
		case b.ResourceLink != nil:
			parts = append(parts, "@"+b.ResourceLink.Uri)
		case b.Resource != nil && b.Resource.Resource.TextResourceContents != nil:
			r := b.Resource.Resource.TextResourceContents
			parts = append(parts, fmt.Sprintf("<%s>\n%s\n</%s>", r.Uri, r.Text, r.Uri))
		}
	}
	m.Text = strings.Join(parts, "\n")
	if m.Text == "" && len(m.Images) == 0 {
		return m, errors.New("prompt has no text")
	}
	return m, m.Validate()
}

func validChat(id string) error {
	if len(id) > router.MaxIDLen {
		return fmt.Errorf("%s is longer than %d bytes", MetaChat, router.MaxIDLen)
	}
	for _, r := range id {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%s has a control character", MetaChat)
		}
	}
	return nil
}

func stopReason(s string) acp.StopReason {
	switch s {
	case chat.StopEndTurn:
		return acp.StopReasonEndTurn
	case chat.StopCancelled:
		return acp.StopReasonCancelled
	case chat.StopMaxTokens:
		return acp.StopReasonMaxTokens
	case chat.StopRefusal, chat.StopError:
		// ACP has no "error" stop reason: the turn ended without the agent's
		// answer, which is what refusal tells a client; _parley/prompt_done says which.
		return acp.StopReasonRefusal
	}
	return acp.StopReasonEndTurn
}

// rpcErr maps parley's sentinel errors onto JSON-RPC errors.
func rpcErr(err error) error {
	switch {
	case errors.Is(err, chat.ErrNotFound), errors.Is(err, chat.ErrBadInput), errors.Is(err, chat.ErrOutsideRoot),
		errors.Is(err, chat.ErrUnknownAgent), errors.Is(err, chat.ErrNoTurn), errors.Is(err, chat.ErrCardClosed),
		errors.Is(err, chat.ErrTooLarge):
		return acp.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	return acp.NewInternalError(map[string]any{"error": err.Error()})
}

// modes is the session's mode state: the thread's mode, and the modes its
// agent last said it has (its newest mode event).
func (a *agent) modes(ctx context.Context, th chat.Thread) *acp.SessionModeState {
	if th.Mode == "" {
		return nil
	}
	st := &acp.SessionModeState{CurrentModeId: acp.SessionModeId(th.Mode), AvailableModes: []acp.SessionMode{}}
	if m, ok := a.lastMode(ctx, th.ID); ok {
		st.AvailableModes = sessionModes(m.Available)
	}
	return st
}

func sessionModes(opts []chat.ModeOption) []acp.SessionMode {
	out := make([]acp.SessionMode, 0, len(opts))
	for _, o := range opts {
		m := acp.SessionMode{Id: acp.SessionModeId(o.ID), Name: o.Name}
		if o.Description != "" {
			m.Description = acp.Ptr(o.Description)
		}
		out = append(out, m)
	}
	return out
}

// lastMode is a thread's newest mode event: remembered from what this
// connection sent, else read from the log once.
func (a *agent) lastMode(ctx context.Context, id chat.ThreadID) (chat.Mode, bool) {
	a.mu.Lock()
	m, ok := a.modeOf[id]
	a.mu.Unlock()
	if ok {
		return m, true
	}
	const page = 1000
	found := false
	for since := int64(0); ; {
		evs, err := a.d.Store.Events(ctx, id, since, page)
		if err != nil {
			return chat.Mode{}, false
		}
		for _, ev := range evs {
			var mm chat.Mode
			if ev.Type == chat.TypeMode && ev.Decode(&mm) == nil && mm.Current != "" {
				m, found = mm, true
			}
			since = ev.Seq
		}
		if len(evs) < page {
			break
		}
	}
	if found {
		a.rememberMode(id, m)
	}
	return m, found
}

func (a *agent) rememberMode(id chat.ThreadID, m chat.Mode) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.modeOf == nil {
		a.modeOf = map[chat.ThreadID]chat.Mode{}
	}
	a.modeOf[id] = m
}

// heldReader blocks reads until open is closed.
type heldReader struct {
	r    io.Reader
	open chan struct{}
}

func (h *heldReader) Read(p []byte) (int, error) {
	<-h.open
	return h.r.Read(p)
}
