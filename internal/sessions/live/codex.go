package live

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Codex maps session id to the pid of the process that runs it, for the
// Codex folder dir ($CODEX_HOME, ~/.codex): Codex keeps a session's rollout
// (sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl) open while a process
// (codex, codex-acp) runs it.
func Codex(ctx context.Context, dir string) map[string]int {
	return holders(ctx, filepath.Join(dir, "sessions"), func(name string) string {
		name, ok := strings.CutSuffix(name, ".jsonl")
		if !ok || !strings.HasPrefix(name, "rollout-") || len(name) < 36 {
			return ""
		}
		return name[len(name)-36:]
	})
}

// holders finds the processes of this user that hold a session file open
// under root: session id → pid. id names a file's session, "" for a file
// that is none.
func holders(ctx context.Context, root string, id func(name string) string) map[string]int {
	root = filepath.Clean(root) + string(filepath.Separator)
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := map[string]int{}
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
					out[sid] = pid
				}
			}
		}
	}
	return out
}
