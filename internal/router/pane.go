package router

import (
	"context"
	"fmt"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
)

// Pane is the terminal th's agent runs in (a tmux thread's pane): a
// driver.ErrUnsupported when its agent runs in none, a driver.ErrNotRunning
// when it has none now.
func (r *Router) Pane(ctx context.Context, th chat.Thread) (driver.Terminal, error) {
	drv, agent, err := r.Driver(th.Agent)
	if err != nil {
		return nil, err
	}
	viewer, ok := drv.(driver.TerminalViewer)
	if !ok {
		return nil, fmt.Errorf("%w: agent %s does not run in a terminal (transport %s): only tmux threads have one", driver.ErrUnsupported, agent.ID, agent.Transport)
	}
	return viewer.Terminal(ctx, th.ID, agent.Options)
}
