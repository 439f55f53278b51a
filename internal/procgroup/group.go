package procgroup

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strconv"
	"syscall"
	"time"
)

// EndGroup ends what is left of process group pgid once its leader is gone
// (an agent killed, or ended by itself, leaves its children running: its
// CLI, shells, MCP servers, still writing the session's files): SIGTERM to
// the group, SIGKILL after grace, and it returns once none of the group runs
// (a zombie waiting for a reaper counts as gone), or when ctx ends. So the
// next agent on the session never meets the last one's files half written.
func EndGroup(ctx context.Context, pgid int, grace time.Duration) error {
	if pgid <= 1 { // kill(0) is parley's own group, kill(-1) every process
		return nil
	}
	if !groupRuns(pgid) {
		return nil
	}
	return terminate(ctx, -pgid, grace, func() bool { return groupRuns(pgid) })
}

// groupRuns reports whether a process of group pgid runs (not a zombie).
func groupRuns(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false // none at all, the common case: no need to read /proc
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true // cannot tell: the signal said some process is there
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// "pid (comm) state ppid pgrp …": the fields after the command's
		// closing parenthesis (the command may hold any character).
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(stat[i+1:])
		if len(f) < 3 || string(f[2]) != strconv.Itoa(pgid) {
			continue
		}
		if f[0][0] != 'Z' && f[0][0] != 'X' {
			return true
		}
	}
	return false
}
