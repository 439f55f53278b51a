package sessions

import (
	"context"
	"strconv"
)

// where says where pid runs: its tmux pane (Locate), else "pid:N".
func where(ctx context.Context, pid int) string {
	if p, ok := Locate(ctx, pid); ok {
		return "tmux:" + p.Server + ":" + p.Target
	}
	return "pid:" + strconv.Itoa(pid)
}
