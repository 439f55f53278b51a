package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/time/rate"

	"github.com/parleyhq/parley/internal/audit"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/fanout"
	"github.com/parleyhq/parley/internal/follow"
	"github.com/parleyhq/parley/internal/marks"
	"github.com/parleyhq/parley/internal/router"
	"github.com/parleyhq/parley/internal/wire"
)

// Close codes parley uses beyond the standard ones.
const (
	CloseSlow     websocket.StatusCode = 4008 // fell behind; reconnect with since
	CloseTooLarge websocket.StatusCode = 4009 // a frame far beyond the size limit
	CloseRevoked  websocket.StatusCode = 4010 // the device was revoked; sign in again
)

const writeTimeout = 5 * time.Second

// conn is one chat socket. The handler's goroutine reads; writing happens on a
// goroutine started only when there is something to write (kick), so an idle
// connection costs one goroutine and its buffers.
type conn struct {
	s     *Server
	ws    *websocket.Conn
	cork  *corkConn // the writer corks it while it drains a burst (cork.go)
	route chat.RouteKey
	f     *follow.Follower
	ctx   context.Context

	writing atomic.Bool // a writer goroutine holds the write side

	rmu     sync.Mutex
	replies [][]byte      // frames for this connection alone (errors, pongs, duplicates)
	slots   chan struct{} // bounds replies; a flooding client is read more slowly

	// gone is closed when nothing more can be written (a write failed, or the
	// hub dropped the connection): a reply then no longer waits for a slot, so
	// the reader goes on handing inputs to the router until the socket closes.
	gone     chan struct{}
	goneOnce sync.Once

	// Owned by whoever holds the write side (as is f's cursor): the watchdog
	// that closes the socket when a write hangs.
	writes   int
	watchdog *time.Timer

	// slowOnce counts the connection in parley_socket_closed_total{reason=
	// "slow"} once, whichever gives up on it first: the hub (it fell behind
	// its buffer) or the watchdog (a write hung).
	slowOnce sync.Once
}

func (s *Server) handleSocket(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	channel := q.Get("channel")
	if channel == "" {
		channel = "web"
	}
	if !socketChannels[channel] {
		httpError(w, http.StatusBadRequest, fmt.Sprintf("channel %q: want web or tui", channel))
		return
	}
	chatID := q.Get("chat")
	if chatID == "" {
		chatID = chat.NewID("c")
	} else if len(chatID) > router.MaxIDLen {
		httpError(w, http.StatusBadRequest, "chat id is too long")
		return
	}
	since := int64(-1)
	if v := q.Get("since"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			httpError(w, http.StatusBadRequest, "since must be a non-negative integer")
			return
		}
		since = n
	}
	sinceThread := chat.ThreadID(q.Get("thread"))
	// drafts=append: the client adds a draft that only grew to the one it
	// shows (docs/protocol.md, "Provisional text"); without it, every draft
	// is whole.
	appends := q.Get("drafts") == "append"
	if v := q.Get("drafts"); v != "" && !appends {
		httpError(w, http.StatusBadRequest, fmt.Sprintf("drafts %q: want append or nothing", v))
		return
	}
	release, ok := s.OpenSocket(w)
	if !ok {
		return
	}
	defer release()

	cw := &corkingWriter{ResponseWriter: w}
	ws, err := websocket.Accept(cw, r, &websocket.AcceptOptions{
		InsecureSkipVerify: true, // the Origin was checked by authed, with our own rules
		CompressionMode:    websocket.CompressionDisabled,
	})
	if err != nil {
		return
	}
	if !s.sockets.add() {
		ws.Close(websocket.StatusGoingAway, fanout.ReasonShutdown)
		return
	}
	defer s.sockets.done()
	defer ws.CloseNow()
	ws.SetReadLimit(-1) // the reader enforces the limit itself, keeping the socket open
	route := chat.RouteKey{Channel: channel, Chat: chatID}
	// The socket's sends and answers name its device in the audit trail.
	ctx, cancel := context.WithCancel(audit.WithActor(s.ctx, audit.ActorFrom(r.Context())))
	defer cancel()
	f, th, err := follow.Subscribe(ctx, follow.Deps{Source: s.store, Router: s.router, Hub: s.fanout}, route,
		follow.Options{Buffer: s.opt.Limits.ConnBuffer, Tail: s.opt.Limits.ReplayTail, DraftAppends: appends})
	if err != nil {
		ws.Close(websocket.StatusInternalError, "could not subscribe")
		return
	}
	defer f.Close()
	sub := f.Sub()
	log := s.log.With("chat", route.String())
	c := &conn{s: s, ws: ws, cork: cw.conn, route: route, f: f, ctx: ctx, slots: make(chan struct{}, 16), gone: make(chan struct{})}
	c.watchdog = time.AfterFunc(time.Hour, func() {
		log.Info("closing a connection whose writes hang", "after", writeTimeout)
		c.countSlow()
		ws.CloseNow()
	})
	c.watchdog.Stop()
	defer c.watchdog.Stop()
	// A revoked device's socket closes at once, saying why.
	defer context.AfterFunc(r.Context(), func() {
		if revoked(r.Context()) {
			c.over()
			s.m.closed.WithLabelValues("revoked").Inc()
			ws.Close(CloseRevoked, ReasonRevoked)
		}
	})()

	// The hub drops a subscription that fell behind (or all of them at shutdown):
	// the close frame says why, and ends the reader's wait.
	sub.SetOnDrop(func(reason string) {
		c.over()
		code := websocket.StatusGoingAway
		if reason == fanout.ReasonSlow {
			c.countSlow()
			code = CloseSlow
		}
		ws.Close(code, reason)
	})
	// The connect sequence holds the write side; items published meanwhile wait
	// in the subscription and are sent after it, deduplicated by seq.
	c.writing.Store(true)
	sub.SetWake(c.kick)
	c.cork.cork() // the replay goes out in few writes
	err = c.connectSequence(th, since, sinceThread)
	if uerr := c.cork.uncork(); err == nil {
		err = uerr
	}
	if err != nil {
		log.Debug("connect sequence failed", "err", err)
		return
	}
	c.release()
	readErr := c.readLoop(ctx)
	if errors.Is(readErr, errTooLarge) {
		s.m.closed.WithLabelValues("too_large").Inc()
		ws.Close(CloseTooLarge, "frame far beyond the size limit")
	}
	log.Debug("socket closed", "read", readErr)
}

var errTooLarge = errors.New("frame far too large")

// kick starts a writer unless one runs. It never blocks.
func (c *conn) kick() {
	if c.writing.CompareAndSwap(false, true) {
		go c.drain()
	}
}

// countSlow counts the connection as dropped for being slow, once.
func (c *conn) countSlow() {
	c.slowOnce.Do(func() { c.s.m.closed.WithLabelValues("slow").Inc() })
}

// over marks the connection as unable to write any more.
func (c *conn) over() { c.goneOnce.Do(func() { close(c.gone) }) }

// release gives up the write side, taking it back if work arrived meanwhile.
func (c *conn) release() {
	c.watchdog.Stop()
	c.writes = 0
	c.writing.Store(false)
	if c.pending() {
		c.kick()
	}
}

func (c *conn) pending() bool {
	c.rmu.Lock()
	n := len(c.replies)
	c.rmu.Unlock()
	return n > 0 || c.f.Sub().Pending()
}

// drain writes whatever waits, then gives up the write side.
func (c *conn) drain() {
	c.cork.cork()
	err := c.flush(c.ctx)
	t := marks.Start()
	if uerr := c.cork.uncork(); err == nil {
		err = uerr
	}
	marks.End("socket write", "", t)
	if err != nil {
		c.over()
		c.ws.CloseNow() // a write failed: the connection is over; the reader sees it
		return
	}
	c.release()
}

func (c *conn) flush(ctx context.Context) error {
	for {
		c.rmu.Lock()
		replies := c.replies
		c.replies = nil
		c.rmu.Unlock()
		for _, f := range replies {
			<-c.slots
			if err := c.write(ctx, f); err != nil {
				return err
			}
		}
		n, err := c.f.Live(ctx, c.show)
		if err != nil {
			return err
		}
		if len(replies) == 0 && n == 0 {
			return nil
		}
	}
}

// write sends one frame. A per-write context costs a timer and a goroutine hand-
// off in the websocket library, a fifth of the CPU at high rates; instead a
// watchdog, re-armed every few frames while the write side is held, drops a
// client that stops reading for writeTimeout. ctx is kept for the caller's reads.
func (c *conn) write(_ context.Context, frame []byte) error {
	if c.writes%64 == 0 {
		c.watchdog.Reset(writeTimeout)
	}
	c.writes++
	return c.ws.Write(context.Background(), websocket.MessageText, frame)
}

func (c *conn) writeEvent(ctx context.Context, p chat.Payload) error {
	ev, err := chat.NewEvent("", p, time.Time{})
	if err != nil {
		return err
	}
	return c.write(ctx, ev.Frame())
}

// connectSequence sends config, then the follower's sequence: thread, replay,
// open cards restated, turn_status and replay_done.
func (c *conn) connectSequence(th *chat.Thread, since int64, sinceThread chat.ThreadID) error {
	cfg := chat.Config{Chat: c.route.Chat, Channel: c.route.Channel, Agents: c.s.agents(c.ctx),
		DefaultAgent: c.s.router.DefaultAgent(), Version: c.s.opt.Version.Version,
		Limits: &chat.ConfigLimits{MaxMessageBytes: c.s.opt.Limits.MaxMessageBytes}}
	if c.s.opt.Cluster != nil {
		cfg.Node = c.s.opt.Cluster.Node()
	}
	if err := c.writeEvent(c.ctx, cfg); err != nil {
		return err
	}
	return c.f.Start(c.ctx, th, since, sinceThread, c.show)
}

// show writes one item of the follower: every kind goes out as its frame.
func (c *conn) show(it follow.Item) error {
	t := marks.Start()
	err := c.write(c.ctx, it.Frame)
	marks.End("socket frame", it.Event.Type, t)
	return err
}

// reply queues a frame for this connection alone. At most cap(slots) wait;
// beyond that the reader waits, so a client flooding inputs is read more slowly
// and every input still gets its answer.
func (c *conn) reply(ctx context.Context, p chat.Payload) {
	ev, err := chat.NewEvent("", p, time.Time{})
	if err != nil {
		return
	}
	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		return
	case <-c.gone:
		return // nobody will write it; the reader must not wait
	}
	c.rmu.Lock()
	c.replies = append(c.replies, ev.Frame())
	c.rmu.Unlock()
	c.kick()
}

func (c *conn) replyErr(ctx context.Context, ref string, err error) {
	code, _ := errorCode(err)
	var we *wire.Error
	if errors.As(err, &we) && we.Ref != "" {
		ref = we.Ref
	}
	c.reply(ctx, chat.Error{Code: code, Message: err.Error(), Ref: ref})
}

// readLoop reads inputs until the socket closes. Bad input gets an error naming
// the problem and the connection goes on.
func (c *conn) readLoop(ctx context.Context) error {
	lim := c.s.opt.Limits
	limiter := rate.NewLimiter(rate.Limit(lim.InputsPerSecond), lim.InputBurst)
	max := config.FrameLimit(lim.MaxMessageBytes) // the router judges a message's own size
	for {
		_, r, err := c.ws.Reader(ctx)
		if err != nil {
			return err
		}
		data, err := io.ReadAll(io.LimitReader(r, max+1))
		if err != nil {
			return err
		}
		read := marks.Start()
		if int64(len(data)) > max {
			// Drain the rest so the socket stays usable; a frame far beyond the
			// limit is not worth reading and closes the connection.
			n, err := io.Copy(io.Discard, io.LimitReader(r, 8*max))
			if err != nil {
				return err
			}
			if n == 8*max {
				return errTooLarge
			}
			c.s.m.inputs.WithLabelValues("unknown", "too_large").Inc()
			c.reply(ctx, chat.Error{Code: chat.CodeTooLarge, Message: fmt.Sprintf("input is larger than the limit of %d bytes (limits.max_message_bytes)", lim.MaxMessageBytes)})
			continue
		}
		if !limiter.Allow() {
			c.s.m.inputs.WithLabelValues("unknown", "rate_limited").Inc()
			in, _ := wire.Decode(data)
			c.reply(ctx, chat.Error{Code: chat.CodeRateLimit, Message: "too many inputs: slow down (the limit is " +
				strconv.FormatFloat(lim.InputsPerSecond, 'f', -1, 64) + " a second)", Ref: in.Ref()})
			continue
		}
		in, err := wire.Decode(data)
		if err != nil {
			c.s.m.inputs.WithLabelValues("invalid", "bad_input").Inc()
			c.replyErr(ctx, "", err)
			continue
		}
		marks.End("socket read", in.Type, read)
		c.handle(ctx, in)
	}
}

func (c *conn) handle(ctx context.Context, in wire.Input) {
	var err error
	switch in.Type {
	case wire.TypePing:
		c.reply(ctx, chat.Pong{})
	case wire.TypeMessage:
		var d chat.Delivery
		d, _, err = c.s.router.Send(ctx, router.SendRequest{From: c.route, Message: *in.Message})
		if errors.Is(err, chat.ErrDuplicate) || errors.Is(err, chat.ErrAway) {
			c.reply(ctx, d) // the receipt it already has (never delivered twice), or one its machine's log will carry later
			err = nil
		}
	case wire.TypeStop:
		err = c.s.router.Control(ctx, router.Control{From: c.route, Stop: true})
	case wire.TypeWithdraw:
		err = c.s.router.Control(ctx, router.Control{From: c.route, Withdraw: in.Withdraw})
	case wire.TypePermissionResponse:
		err = c.s.router.Control(ctx, router.Control{From: c.route, Permission: in.Permission})
	case wire.TypeQuestionAnswer:
		err = c.s.router.Control(ctx, router.Control{From: c.route, Answer: in.Answer})
	case wire.TypeSetMode:
		err = c.s.router.Control(ctx, router.Control{From: c.route, SetMode: in.SetMode})
	case wire.TypeSetConfigOption:
		err = c.s.router.Control(ctx, router.Control{From: c.route, SetOption: in.SetOption})
	case wire.TypeHandBack:
		err = c.s.router.Control(ctx, router.Control{From: c.route, HandBack: true})
		if err == nil {
			c.reply(ctx, chat.Done{Ref: in.Ref()})
		}
	case wire.TypeResumeSession:
		_, err = c.s.router.ContinueSession(ctx, c.route, in.Resume.ResumeIntent)
		if err == nil {
			c.reply(ctx, chat.Done{Ref: in.Ref()})
		}
	case wire.TypeOpenThread:
		err = c.s.router.OpenThread(ctx, c.route, chat.ThreadID(in.Open.ThreadID))
	case wire.TypeEditThread:
		// The same control as PATCH /api/threads/{id}: thread_info tells
		// every screen; done tells this connection it took effect.
		err = c.s.router.Control(ctx, router.Control{From: c.route, Thread: chat.ThreadID(in.Edit.ThreadID), Edit: &in.Edit.ThreadEdit})
		if err == nil {
			c.reply(ctx, chat.Done{Ref: in.Ref()})
		}
	case wire.TypeDeleteThread:
		// A connection showing the thread is closed by the delete itself
		// (the reason says it was deleted), before this done could go.
		err = c.s.router.DeleteThreadWith(ctx, chat.ThreadID(in.Delete.ThreadID),
			router.DeleteOptions{RemoveWorktree: in.Delete.RemoveWorktree, Force: in.Delete.Force})
		if err == nil {
			c.reply(ctx, chat.Done{Ref: in.Ref(), Note: router.DeletedNote})
		}
	}
	outcome := "ok"
	if err != nil {
		outcome, _ = errorCode(err)
		c.replyErr(ctx, in.Ref(), err)
	}
	c.s.m.inputs.WithLabelValues(in.Type, outcome).Inc()
}
