package tui

import (
	"context"
	"errors"
	"log/slog"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
)

// ErrOffline is returned by Link.Send while no socket is open.
var ErrOffline = client.ErrOffline

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

// Link is the model's Backend: a client.Follow on the route (reconnecting with
// `since`, each log event once; its MinBackoff, MaxBackoff and PingEvery are
// the link's) and the REST API beside it.
type Link struct {
	*client.Follow
	api client.API
	log *slog.Logger
}

// NewLink returns a link to server on the route opt names (Channel defaults to tui).
func NewLink(server, token string, opt client.Options, log *slog.Logger) *Link {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opt.Channel == "" {
		opt.Channel = "tui"
	}
	return &Link{Follow: client.NewFollow(server, token, opt), api: client.API{Server: server, Token: token}, log: log}
}

// Run follows the route until ctx ends, handing every frame and every change
// of connection state to deliver (a tea.Program's Send).
func (l *Link) Run(ctx context.Context, deliver func(tea.Msg)) {
	err := l.Follow.Run(ctx, func(u client.Update) error {
		switch u.Kind {
		case client.UpdateOnline:
			deliver(OnlineMsg{})
		case client.UpdateOffline:
			l.log.Debug("offline", "attempt", u.Attempt, "err", u.Err)
			deliver(OfflineMsg{Err: u.Err, Attempt: u.Attempt, Retry: u.Retry})
		case client.UpdateEvent:
			deliver(EventMsg{Event: u.Event})
		}
		return nil
	})
	if errors.Is(err, client.ErrRefused) {
		deliver(FatalMsg{Err: err})
	}
}

// Usage is a thread's usage totals over REST.
func (l *Link) Usage(ctx context.Context, id chat.ThreadID) (chat.UsageTotals, error) {
	return l.api.Usage(ctx, id)
}

// Threads lists the daemon's threads over REST.
func (l *Link) Threads(ctx context.Context) ([]chat.Thread, error) { return l.api.Threads(ctx) }

func (l *Link) Search(ctx context.Context, q string) ([]chat.SearchHit, []client.Unsearched, error) {
	return l.api.SearchAll(ctx, q)
}
