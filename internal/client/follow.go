package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parleyhq/parley/internal/backoff"
	"github.com/parleyhq/parley/internal/chat"
)

// ErrOffline is returned by Follow.Send while no socket is open.
var ErrOffline = errors.New("not connected to parley")

// ErrRefused says the server refused the token (HTTP 401 or 403): Follow
// stops, as dialling again would be refused again.
var ErrRefused = errors.New("parley refused the token: check --token or PARLEY_TOKEN")

// errGap ends a connection on which a live event skipped a seq.
var errGap = errors.New("gap in the event log")

// UpdateKind says what an Update reports.
type UpdateKind uint8

// Kinds of update.
const (
	UpdateOnline  UpdateKind = iota + 1 // a socket is open; its connect sequence follows
	UpdateOffline                       // the socket is gone (or a dial failed); Retry says when the next try is
	UpdateEvent                         // one server frame, never a log event handed on before
)

// Update is one thing Follow reports.
type Update struct {
	Kind UpdateKind
	// Event is the frame (UpdateEvent). Replaying is true before the
	// replay_done of the thread the frame belongs to.
	Event     Event
	Replaying bool
	// Err, Attempt (failed dials in a row, 0 when a connection just ended) and
	// Retry (the wait before the next dial) describe an UpdateOffline.
	Err     error
	Attempt int
	Retry   time.Duration
}

// Follow keeps one route's chat socket open, the Go twin of the dashboard's
// ChatSocket (ui/src/protocol.ts): it dials with since (the newest seq it
// handed on, of the thread it belongs to) so the server replays exactly what
// was missed, backs off between failed dials, pings a quiet socket and drops
// one silent for three pings, hands every log event on once (by seq), and
// dials again when a live event skips a seq. `parley chat` and `parley send`
// use it.
type Follow struct {
	// MinBackoff and MaxBackoff bound the wait between dials (default 200ms, 3s).
	MinBackoff, MaxBackoff time.Duration
	// PingEvery is how often a quiet socket is pinged (default 15s); one silent
	// for three of these is dropped and dialled again.
	PingEvery time.Duration
	// GiveUp, when set, ends Run with the last dial error once no socket has
	// been open for this long. Zero tries for ever.
	GiveUp time.Duration
	// FailFast ends Run when the very first dial fails (no daemon: say so at
	// once rather than wait).
	FailFast bool

	server, token string
	opt           Options

	mu      sync.Mutex
	conn    *Conn
	chat    string        // the route's chat, once config named it
	thread  chat.ThreadID // the thread the route showed last
	lastSeq int64         // the newest seq of thread handed on
}

// NewFollow returns a follower of the route opt names. opt.Since and
// opt.Thread are where the first dial starts; later dials start from what was
// handed on (Since -1 and no Thread: the server replays the tail).
func NewFollow(server, token string, opt Options) *Follow {
	f := &Follow{MinBackoff: 200 * time.Millisecond, MaxBackoff: 3 * time.Second, PingEvery: 15 * time.Second,
		server: server, token: token, opt: opt, chat: opt.Chat}
	if opt.Thread != "" && opt.Since >= 0 {
		f.thread, f.lastSeq = opt.Thread, opt.Since
	}
	return f
}

// stopped carries the handler's own error out of the read loop.
type stopped struct{ err error }

func (s stopped) Error() string { return s.err.Error() }

// Run dials and reads until ctx ends (ctx.Err()), handle returns an error
// (that error), the token is refused (an error wrapping ErrRefused), or GiveUp
// or FailFast says to stop (the dial's error). handle is called on Run's
// goroutine, one update at a time; it may call Send.
func (f *Follow) Run(ctx context.Context, handle func(Update) error) error {
	redial := backoff.Policy{Min: f.MinBackoff, Max: f.MaxBackoff}
	attempt := 0
	offline := time.Now() // since when no socket has been open
	first := true
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		c, resp, err := Dial(dctx, f.server, f.token, f.dialOptions())
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if resp != nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
				return fmt.Errorf("%w (HTTP %s)", ErrRefused, resp.Status)
			}
			if (first && f.FailFast) || (f.GiveUp > 0 && time.Since(offline) >= f.GiveUp) {
				return err
			}
			attempt++
			wait := redial.Delay(attempt - 1)
			if err := handle(Update{Kind: UpdateOffline, Err: err, Attempt: attempt, Retry: wait}); err != nil {
				return err
			}
			if !sleep(ctx, wait) {
				return ctx.Err()
			}
			continue
		}
		first, attempt = false, 0
		f.mu.Lock()
		f.conn = c
		f.mu.Unlock()
		err = handle(Update{Kind: UpdateOnline})
		if err == nil {
			err = f.read(ctx, c, handle)
		} else {
			err = stopped{err}
		}
		f.mu.Lock()
		f.conn = nil
		f.mu.Unlock()
		c.CloseNow()
		var s stopped
		if errors.As(err, &s) {
			return s.err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		offline = time.Now()
		if err := handle(Update{Kind: UpdateOffline, Err: err, Retry: f.MinBackoff}); err != nil {
			return err
		}
		// Wait first: a daemon that just closed the socket is likely going down.
		if !sleep(ctx, f.MinBackoff) {
			return ctx.Err()
		}
	}
}

// dialOptions are the route's options with the cursor to start from.
func (f *Follow) dialOptions() Options {
	opt := f.opt
	f.mu.Lock()
	defer f.mu.Unlock()
	opt.Chat = f.chat
	if f.thread != "" {
		opt.Since, opt.Thread = f.lastSeq, f.thread
	}
	return opt
}

// read hands frames on until the socket ends.
func (f *Follow) read(ctx context.Context, c *Conn, handle func(Update) error) error {
	rctx, cancel := context.WithCancel(ctx)
	var last atomic.Int64 // when the newest frame came (unix nanoseconds)
	last.Store(time.Now().UnixNano())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		f.keepalive(rctx, c, &last)
	}()
	defer func() { cancel(); wg.Wait() }()
	replaying := true
	for {
		ev, err := c.Next(rctx)
		if err != nil {
			return err
		}
		last.Store(time.Now().UnixNano())
		fresh, err := f.advance(ev, &replaying)
		if err != nil {
			return err
		}
		if !fresh {
			continue
		}
		if err := handle(Update{Kind: UpdateEvent, Event: ev, Replaying: replaying}); err != nil {
			return stopped{err}
		}
	}
}

// advance moves the cursor past ev and reports whether ev is to be handed on:
// not a log event already handed on, not a pong. A live event past the next
// seq is a gap: the connection is dropped and dialled again from the cursor.
func (f *Follow) advance(ev Event, replaying *bool) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case ev.Type == chat.TypePong:
		return false, nil
	case ev.Type == chat.TypeConfig:
		var cfg chat.Config
		if ev.Decode(&cfg) == nil && cfg.Chat != "" {
			f.chat = cfg.Chat // a reconnect opens the same route
		}
	case ev.Type == chat.TypeThread:
		if ev.Thread != f.thread {
			f.thread, f.lastSeq = ev.Thread, 0
		}
		*replaying = true // the thread's sequence follows, up to its replay_done
	case ev.Type == chat.TypeHistoryPruned:
		var p chat.HistoryPruned
		if ev.Decode(&p) == nil && p.ThroughSeq > f.lastSeq {
			f.lastSeq = p.ThroughSeq // gone from the log: nothing to wait for
		}
	case ev.Type == chat.TypeReplayDone:
		*replaying = false
	case ev.Type == chat.TypeAgentDraft:
		// Provisional text belongs right after its event: after a later one
		// it may stand for final words already shown.
		var p chat.AgentDraft
		return ev.Decode(&p) == nil && ev.Thread == f.thread && p.AfterSeq == f.lastSeq, nil
	case ev.Seq > 0:
		if ev.Thread != f.thread || ev.Seq <= f.lastSeq {
			return false, nil
		}
		if !*replaying && f.lastSeq > 0 && ev.Seq > f.lastSeq+1 {
			return false, fmt.Errorf("client: %w: seq %d after %d", errGap, ev.Seq, f.lastSeq)
		}
		f.lastSeq = ev.Seq
	}
	return true, nil
}

// keepalive pings a quiet socket and drops one that stays silent, so a dead
// network shows as offline instead of a screen that looks live.
func (f *Follow) keepalive(ctx context.Context, c *Conn, last *atomic.Int64) {
	t := time.NewTicker(f.PingEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if time.Since(time.Unix(0, last.Load())) > 3*f.PingEvery {
			c.CloseNow()
			return
		}
		sctx, cancel := context.WithTimeout(ctx, f.PingEvery)
		_ = c.Send(sctx, map[string]string{"type": "ping"})
		cancel()
	}
}

// Send writes one input on the open socket, or fails with ErrOffline.
func (f *Follow) Send(ctx context.Context, v any) error {
	f.mu.Lock()
	c := f.conn
	f.mu.Unlock()
	if c == nil {
		return ErrOffline
	}
	return c.Send(ctx, v)
}

// Cursor is the thread the route showed last and the newest seq of it handed on.
func (f *Follow) Cursor() (chat.ThreadID, int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.thread, f.lastSeq
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
