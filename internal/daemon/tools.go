package daemon

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/router"
)

// person is what parley's MCP server reaches: the router, once it runs (the
// router is given the server first, to grant its sessions credentials).
type person struct {
	rt *atomic.Pointer[router.Router]
}

func (p person) Ask(ctx context.Context, thread chat.ThreadID, q chat.QuestionItem) ([]string, error) {
	rt := p.rt.Load()
	if rt == nil {
		return nil, chat.ErrClosed
	}
	return rt.Ask(ctx, thread, q)
}

func (p person) Notify(ctx context.Context, thread chat.ThreadID, n chat.Notice) error {
	rt := p.rt.Load()
	if rt == nil {
		return chat.ErrClosed
	}
	return rt.Notify(ctx, thread, n)
}

// SetToolKeepAlive sets how often a waiting ask_person tells its agent it
// still waits (mcpserver.DefaultKeepAlive). For Go tests that shorten an
// agent's idle bound; no config key reaches it.
func (d *Daemon) SetToolKeepAlive(every time.Duration) { d.tools.SetKeepAlive(every) }
