package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/time/rate"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/hub"
	"github.com/parleyhq/parley/internal/router"
	"github.com/parleyhq/parley/internal/wire"
)

// Close codes parley uses beyond the standard ones.
const (
	CloseSlow     websocket.StatusCode = 4008 // fell behind; reconnect with since
	CloseTooLarge websocket.StatusCode = 4009 // a frame far beyond the size limit
)

const writeTimeout = 5 * time.Second

// conn is one chat socket: a reader goroutine (the handler's) and one writer.
type conn struct {
	s     *Server
	ws    *websocket.Conn
	route chat.RouteKey
	sub   *hub.Sub
	// replies are frames for this connection alone (errors, pongs, duplicates).
	replies chan []byte
	// thread and lastSeq are the writer's: what it has sent so far.
	thread  chat.ThreadID
	lastSeq int64
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
	} else if len(chatID) > wire.MaxIDLen {
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

	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		InsecureSkipVerify: true, // the Origin was checked by authed, with our own rules
		CompressionMode:    websocket.CompressionDisabled,
	})
	if err != nil {
		return
	}
	ws.SetReadLimit(-1) // the reader enforces the limit itself, keeping the socket open
	route := chat.RouteKey{Channel: channel, Chat: chatID}
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	sub, th, err := s.router.Subscribe(ctx, route, s.opt.Limits.ConnBuffer)
	if err != nil {
		ws.Close(websocket.StatusInternalError, "could not subscribe")
		return
	}
	defer s.hub.Unsubscribe(sub)
	c := &conn{s: s, ws: ws, route: route, sub: sub, replies: make(chan []byte, 64)}
	log := s.log.With("chat", route.String())
	log.Debug("socket open")

	writerDone := make(chan error, 1)
	go func() {
		// The writer closes the socket when it stops first (slow, shutdown), with
		// the reason in the close frame; that also ends the reader's wait.
		werr := c.writeLoop(ctx, th, since, sinceThread)
		switch {
		case errors.Is(werr, errSlow):
			s.m.closed.WithLabelValues("slow").Inc()
			ws.Close(CloseSlow, hub.ReasonSlow)
		case s.ctx.Err() != nil:
			ws.Close(websocket.StatusGoingAway, hub.ReasonShutdown)
		case ctx.Err() == nil:
			ws.Close(websocket.StatusInternalError, "write failed")
		}
		writerDone <- werr
	}()
	readErr := c.readLoop(ctx)
	if errors.Is(readErr, errTooLarge) {
		s.m.closed.WithLabelValues("too_large").Inc()
		ws.Close(CloseTooLarge, "frame far beyond the size limit")
	}
	cancel()
	werr := <-writerDone
	ws.CloseNow()
	log.Debug("socket closed", "read", readErr, "write", werr)
}

var (
	errSlow     = errors.New("connection too slow")
	errTooLarge = errors.New("frame far too large")
)

func (c *conn) write(ctx context.Context, frame []byte) error {
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	return c.ws.Write(ctx, websocket.MessageText, frame)
}

func (c *conn) writeEvent(ctx context.Context, p chat.Payload) error {
	ev, err := chat.NewEvent("", p, time.Time{})
	if err != nil {
		return err
	}
	return c.write(ctx, ev.Frame())
}

// writeLoop sends the connect sequence (config, thread, replay, open cards,
// turn_status, replay_done), then live events and this connection's replies.
func (c *conn) writeLoop(ctx context.Context, th *chat.Thread, since int64, sinceThread chat.ThreadID) error {
	cfg := chat.Config{Chat: c.route.Chat, Channel: c.route.Channel, Agents: c.s.router.Agents(),
		DefaultAgent: c.s.router.DefaultAgent(), Version: c.s.opt.Version.Version}
	if err := c.writeEvent(ctx, cfg); err != nil {
		return err
	}
	if th != nil {
		if sinceThread != "" && sinceThread != th.ID {
			since = -1 // the client's seq belongs to another thread
		}
		if err := c.showThread(ctx, th.ID, since); err != nil {
			return err
		}
	} else if err := c.writeEvent(ctx, chat.TurnStatus{}); err != nil {
		return err
	}
	if err := c.writeEvent(ctx, chat.ReplayDone{LastSeq: c.lastSeq}); err != nil {
		return err
	}
	for {
		select {
		case <-c.sub.Ready():
			for _, it := range c.sub.Take() {
				if it.Switch {
					if err := c.showThread(ctx, it.Thread, -1); err != nil {
						return err
					}
					if err := c.writeEvent(ctx, chat.ReplayDone{LastSeq: c.lastSeq}); err != nil {
						return err
					}
					continue
				}
				if it.Thread != c.thread || it.Seq <= c.lastSeq {
					continue // already sent in the replay
				}
				if err := c.write(ctx, it.Frame); err != nil {
					return err
				}
				c.lastSeq = it.Seq
			}
		case f := <-c.replies:
			if err := c.write(ctx, f); err != nil {
				return err
			}
		case <-c.sub.Done():
			if c.s.hub.Reason(c.sub) == hub.ReasonSlow {
				return errSlow
			}
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// showThread sends the thread, replays its log after since (or its tail when
// since < 0), its open cards again, and whether a turn runs.
func (c *conn) showThread(ctx context.Context, id chat.ThreadID, since int64) error {
	th, err := c.s.store.Thread(ctx, id)
	if err != nil {
		return err
	}
	c.thread, c.lastSeq = id, 0
	if err := c.writeEvent(ctx, chat.ThreadEvent{Thread: th}); err != nil {
		return err
	}
	if since < 0 {
		tail, err := c.s.store.Tail(ctx, id, c.s.opt.Limits.ReplayTail)
		if err != nil {
			return err
		}
		if len(tail) > 0 {
			since = tail[0].Seq - 1
		} else {
			since = 0
		}
	}
	c.lastSeq = since
	const page = 1000
	for {
		evs, err := c.s.store.Events(ctx, id, c.lastSeq, page)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			if err := c.write(ctx, ev.Frame()); err != nil {
				return err
			}
			c.lastSeq = ev.Seq
		}
		if len(evs) < page {
			break
		}
	}
	open, err := c.s.store.Cards(ctx, id, chat.CardOpen)
	if err != nil {
		return err
	}
	for _, card := range open {
		ev := chat.Event{Type: chat.TypePermissionRequest, Thread: id, Payload: card.Request}
		if card.Kind == chat.CardQuestion {
			ev.Type = chat.TypeQuestion
		}
		if err := c.write(ctx, ev.Frame()); err != nil {
			return err
		}
	}
	th, err = c.s.store.Thread(ctx, id)
	if err != nil {
		return err
	}
	return c.writeEvent(ctx, chat.TurnStatus{Active: th.TurnMessageID != "", MessageID: th.TurnMessageID})
}

// reply queues a frame for this connection alone. When replies back up, the
// reader waits: a client flooding inputs is simply read more slowly, and every
// input still gets its answer.
func (c *conn) reply(ctx context.Context, p chat.Payload) {
	ev, err := chat.NewEvent("", p, time.Time{})
	if err != nil {
		return
	}
	select {
	case c.replies <- ev.Frame():
	case <-ctx.Done():
	}
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
	max := int64(lim.MaxMessageBytes)
	for {
		_, r, err := c.ws.Reader(ctx)
		if err != nil {
			return err
		}
		data, err := io.ReadAll(io.LimitReader(r, max+1))
		if err != nil {
			return err
		}
		if int64(len(data)) > max {
			// Drain the rest so the socket stays usable; a frame far beyond the
			// limit is not worth reading and closes the connection.
			n, err := io.Copy(io.Discard, io.LimitReader(r, 64*max))
			if err != nil {
				return err
			}
			if n == 64*max {
				return errTooLarge
			}
			c.s.m.inputs.WithLabelValues("unknown", "too_large").Inc()
			c.reply(ctx, chat.Error{Code: chat.CodeTooLarge, Message: fmt.Sprintf("input is larger than the limit of %d bytes", max)})
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
		if errors.Is(err, chat.ErrDuplicate) {
			c.reply(ctx, d) // the receipt it already has; never delivered twice
			err = nil
		}
	case wire.TypeStop:
		err = c.s.router.Control(ctx, router.Control{From: c.route, Stop: true})
	case wire.TypePermissionResponse:
		err = c.s.router.Control(ctx, router.Control{From: c.route, Permission: in.Permission})
	case wire.TypeQuestionAnswer:
		err = c.s.router.Control(ctx, router.Control{From: c.route, Answer: in.Answer})
	case wire.TypeSetMode:
		err = c.s.router.Control(ctx, router.Control{From: c.route, SetMode: in.SetMode})
	case wire.TypeSetConfigOption:
		err = c.s.router.Control(ctx, router.Control{From: c.route, SetOption: in.SetOption})
	case wire.TypeResumeSession:
		_, err = c.s.router.ResumeSession(ctx, c.route, in.Resume.Agent, in.Resume.SessionID, in.Resume.Cwd)
	}
	outcome := "ok"
	if err != nil {
		outcome, _ = errorCode(err)
		c.replyErr(ctx, in.Ref(), err)
	}
	c.s.m.inputs.WithLabelValues(in.Type, outcome).Inc()
}
