package tui

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
)

// ErrOffline is returned by Link.Send while no socket is open.
var ErrOffline = errors.New("not connected to parley")

// Messages the link hands the program.
type (
	// OnlineMsg says a socket is open; the connect sequence (config … replay_done) follows.
	OnlineMsg struct{}
	// OfflineMsg says the socket is gone and when the next attempt is.
	OfflineMsg struct {
		Err     error
		Attempt int           // failed attempts in a row (0: the connection just dropped)
		Retry   time.Duration // wait before the next attempt
	}
	// FatalMsg says the link gave up (the token was refused): the program ends.
	FatalMsg struct{ Err error }
	// EventMsg is one server frame.
	EventMsg struct{ Event client.Event }
)

// Link keeps one chat socket open on a route, reconnecting with `since` so the
// server replays exactly what was missed. It is the model's Backend.
type Link struct {
	server, token string
	opt           client.Options
	api           client.API
	log           *slog.Logger

	// MinBackoff and MaxBackoff bound the wait between attempts.
	MinBackoff, MaxBackoff time.Duration
	// PingEvery is how often a quiet socket is pinged; one silent for three
	// of these is dropped and dialled again.
	PingEvery time.Duration

	mu      sync.Mutex
	conn    *client.Conn
	thread  chat.ThreadID // the thread the route showed last
	lastSeq int64         // the newest seq read on it
}

// NewLink returns a link to server on the route opt names (Channel defaults to tui).
func NewLink(server, token string, opt client.Options, log *slog.Logger) *Link {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opt.Channel == "" {
		opt.Channel = "tui"
	}
	return &Link{server: server, token: token, opt: opt, log: log,
		api:        client.API{Server: server, Token: token},
		MinBackoff: 200 * time.Millisecond, MaxBackoff: 3 * time.Second, PingEvery: 15 * time.Second}
}

// Run dials and reads until ctx ends, handing every frame and every change of
// connection state to deliver (a tea.Program's Send).
func (l *Link) Run(ctx context.Context, deliver func(tea.Msg)) {
	backoff := l.MinBackoff
	attempt := 0
	for ctx.Err() == nil {
		opt := l.opt
		l.mu.Lock()
		if l.thread != "" {
			opt.Thread, opt.Since = l.thread, l.lastSeq
		}
		l.mu.Unlock()
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		c, resp, err := client.Dial(dctx, l.server, l.token, opt)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if resp != nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
				deliver(FatalMsg{Err: errors.New("parley refused the token (HTTP " + resp.Status + "): check --token or PARLEY_TOKEN")})
				return
			}
			attempt++
			l.log.Debug("dial failed", "attempt", attempt, "err", err)
			deliver(OfflineMsg{Err: err, Attempt: attempt, Retry: backoff})
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			backoff = min(backoff*2, l.MaxBackoff)
			continue
		}
		attempt, backoff = 0, l.MinBackoff
		l.mu.Lock()
		l.conn = c
		l.mu.Unlock()
		deliver(OnlineMsg{})
		err = l.read(ctx, c, deliver)
		l.mu.Lock()
		l.conn = nil
		l.mu.Unlock()
		c.CloseNow()
		if ctx.Err() != nil {
			return
		}
		l.log.Debug("socket ended", "err", err)
		deliver(OfflineMsg{Err: err, Retry: l.MinBackoff})
		t := time.NewTimer(l.MinBackoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// read hands frames on until the socket ends, keeping the cursor for since.
func (l *Link) read(ctx context.Context, c *client.Conn, deliver func(tea.Msg)) error {
	rctx, cancel := context.WithCancel(ctx)
	var last atomic.Int64 // when the newest frame came (unix nanoseconds)
	last.Store(time.Now().UnixNano())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		l.keepalive(rctx, c, &last)
	}()
	defer func() { cancel(); wg.Wait() }()
	for {
		ev, err := c.Next(rctx)
		if err != nil {
			return err
		}
		last.Store(time.Now().UnixNano())
		l.mu.Lock()
		switch {
		case ev.Type == chat.TypeThread:
			if ev.Thread != l.thread {
				l.thread, l.lastSeq = ev.Thread, 0
			}
		case ev.Seq > 0 && ev.Thread == l.thread && ev.Seq > l.lastSeq:
			l.lastSeq = ev.Seq
		}
		l.mu.Unlock()
		deliver(EventMsg{Event: ev})
	}
}

// keepalive pings a quiet socket and drops one that stays silent, so a dead
// network shows as offline instead of a screen that looks live.
func (l *Link) keepalive(ctx context.Context, c *client.Conn, last *atomic.Int64) {
	t := time.NewTicker(l.PingEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if time.Since(time.Unix(0, last.Load())) > 3*l.PingEvery {
			l.log.Debug("socket silent: dropping it")
			c.CloseNow()
			return
		}
		sctx, cancel := context.WithTimeout(ctx, l.PingEvery)
		_ = c.Send(sctx, map[string]string{"type": "ping"})
		cancel()
	}
}

// Send writes one input on the open socket, or fails with ErrOffline.
func (l *Link) Send(ctx context.Context, v any) error {
	l.mu.Lock()
	c := l.conn
	l.mu.Unlock()
	if c == nil {
		return ErrOffline
	}
	return c.Send(ctx, v)
}

// Threads lists the daemon's threads over REST.
func (l *Link) Threads(ctx context.Context) ([]chat.Thread, error) { return l.api.Threads(ctx) }
