package sessions

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/parleyhq/parley/internal/driver"
)

// ACP is an ACP agent that lists its own sessions (session/list): asked in
// the background, since each asking starts the agent (Codex, Copilot,
// OpenCode take from one to twenty seconds), its last answer kept. A
// listing waits for the first answer at most FirstWait; later ones take the
// last answer and ask again when it is older than MaxAge.
type ACP struct {
	ID  string // the configured agent's id: Session.Agent
	Ask func(ctx context.Context) ([]driver.NativeSession, error)
	// FirstWait and MaxAge: 0 is 5 s and 1 min.
	FirstWait, MaxAge time.Duration

	mu          sync.Mutex
	last        []Session
	at          time.Time
	unsupported bool          // the agent said it cannot list: never asked again
	inflight    chan struct{} // closed when the asking in flight ends
	ctx         context.Context
	cancel      context.CancelFunc
	wg          sync.WaitGroup
}

// NewACP is an ACP source for agent id, asking list.
func NewACP(id string, list func(context.Context) ([]driver.NativeSession, error)) *ACP {
	ctx, cancel := context.WithCancel(context.Background())
	return &ACP{ID: id, Ask: list, ctx: ctx, cancel: cancel}
}

func (a *ACP) Agent() string { return a.ID }

// List implements Lister.
func (a *ACP) List(ctx context.Context) ([]Session, error) {
	a.mu.Lock()
	if a.unsupported {
		a.mu.Unlock()
		return nil, nil
	}
	done := a.inflight
	if done == nil && time.Since(a.at) > cmpDur(a.MaxAge, time.Minute) {
		done = make(chan struct{})
		a.inflight = done
		a.wg.Add(1)
		go a.ask(done)
	}
	first := a.at.IsZero()
	a.mu.Unlock()
	if first && done != nil {
		t := time.NewTimer(cmpDur(a.FirstWait, 5*time.Second))
		select {
		case <-done:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Session(nil), a.last...), nil
}

func (a *ACP) ask(done chan struct{}) {
	defer a.wg.Done()
	ctx, cancel := context.WithTimeout(a.ctx, 2*time.Minute)
	list, err := a.Ask(ctx)
	cancel()
	a.mu.Lock()
	switch {
	case errors.Is(err, driver.ErrUnsupported):
		a.unsupported = true
	case err == nil:
		a.last = a.last[:0]
		for _, n := range list {
			a.last = append(a.last, Session{ID: n.ID, Agent: a.ID, Cwd: n.Cwd, Title: shorten(n.Title, titleRunes), UpdatedAt: n.UpdatedAt})
		}
		a.at = time.Now()
	default:
		a.at = time.Now() // not again at once: a broken agent is not started at every listing
	}
	a.inflight = nil
	a.mu.Unlock()
	close(done)
}

// Close ends the asking in flight and waits for it.
func (a *ACP) Close() error {
	a.cancel()
	a.wg.Wait()
	return nil
}

func cmpDur(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
