package mcpserver

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An ask may wait hours for the person, and agents give up on a tool call
// that goes quiet: Claude Code aborts an HTTP server's call after
// CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT (5 minutes by default) with no response
// or progress notification. While the person has not answered, ask_person
// tells the agent it is still waiting, every KeepAlive, as a progress
// notification on the call (when the agent gave the call a progress token,
// as Claude Code does).

// DefaultKeepAlive is how often a waiting ask_person says it still waits:
// well inside the shortest idle bound known (Claude Code's 5 minutes).
const DefaultKeepAlive = 30 * time.Second

// keepAlive sends req's progress notifications until the returned stop is
// called or ctx ends.
func (s *Server) keepAlive(ctx context.Context, req *mcp.CallToolRequest) (stop func()) {
	s.mu.Lock()
	every := s.keepEvery
	s.mu.Unlock()
	token := req.Params.GetProgressToken()
	if token == nil || req.Session == nil || every <= 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for n := 1; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token,
				Progress: float64(n), Message: "waiting for the person's answer"})
			if err != nil && ctx.Err() == nil {
				s.log.Debug("mcpserver: progress of a waiting ask", "err", err)
			}
		}
	}()
	return func() { cancel(); <-done }
}
