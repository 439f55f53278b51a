package sessions

import (
	"context"

	"github.com/parleyhq/parley/internal/sessions/geminirun"
)

// Running implements Runner: Gemini CLI's running sessions are told from
// its processes (package geminirun).
func (g Gemini) Running(ctx context.Context) (map[string]Live, error) {
	out := map[string]Live{}
	for id, pid := range geminirun.Sessions(ctx, g.Dir) {
		out[id] = Live{PID: pid, Where: where(ctx, pid)}
	}
	return out, nil
}

var _ Runner = Gemini{}
