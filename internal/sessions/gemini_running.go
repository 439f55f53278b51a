package sessions

import (
	"context"

	"github.com/parleyhq/parley/internal/sessions/live"
)

// Running implements Runner: Gemini CLI's running sessions are told from
// its processes (package live).
func (g Gemini) Running(ctx context.Context) (map[string]Live, error) {
	out := map[string]Live{}
	for id, pid := range live.Gemini(ctx, g.Dir) {
		out[id] = Live{PID: pid, Where: where(ctx, pid)}
	}
	return out, nil
}

var _ Runner = Gemini{}
