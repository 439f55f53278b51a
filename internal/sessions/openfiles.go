package sessions

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// openSessions finds the processes of this user that hold a session file
// open under root (an agent that writes no record of its running sessions,
// Codex, keeps its rollout open while it runs): session id → where it runs.
// id names a file's session, "" for a file that is none.
func openSessions(ctx context.Context, root string, id func(name string) string) map[string]Live {
	root = filepath.Clean(root) + string(filepath.Separator)
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := map[string]Live{}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || ctx.Err() != nil {
			continue
		}
		fdDir := filepath.Join("/proc", p.Name(), "fd")
		fds, err := os.ReadDir(fdDir) // another user's: not readable, not ours
		if err != nil {
			continue
		}
		for _, fd := range fds {
			target, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
			if err != nil || !strings.HasPrefix(target, root) {
				continue
			}
			if sid := id(filepath.Base(target)); sid != "" {
				if _, seen := out[sid]; !seen {
					out[sid] = Live{PID: pid, Where: where(ctx, pid)}
				}
			}
		}
	}
	return out
}

// where says where pid runs: its tmux pane (Locate), else "pid:N".
func where(ctx context.Context, pid int) string {
	if p, ok := Locate(ctx, pid); ok {
		return "tmux:" + p.Server + ":" + p.Target
	}
	return "pid:" + strconv.Itoa(pid)
}
