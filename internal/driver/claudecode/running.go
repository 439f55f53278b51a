package claudecode

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// RunningSession answers the pid of the live Claude Code process that runs
// session id, or 0. Every running claude (TUI and -p alike) keeps
// <config dir>/sessions/<pid>.json, removed when it exits normally; a killed
// one's file stays, so the pid must be alive and, when the file says when the
// process started (procStart, field 22 of /proc/<pid>/stat), be that process
// and not a later one given the same pid.
func RunningSession(configDir, id string) (int, error) {
	files, err := filepath.Glob(filepath.Join(configDir, "sessions", "*.json"))
	if err != nil {
		return 0, err
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue // it exited meanwhile
		}
		if err != nil {
			return 0, fmt.Errorf("claude's running sessions: %w", err)
		}
		var e struct {
			PID       int    `json:"pid"`
			SessionID string `json:"sessionId"`
			ProcStart string `json:"procStart"`
		}
		if json.Unmarshal(b, &e) != nil || e.SessionID != id || e.PID <= 0 {
			continue
		}
		if Alive(e.PID, e.ProcStart) {
			return e.PID, nil
		}
	}
	return 0, nil
}

// Alive reports whether the process a session file names still runs: pid
// lives, is neither exiting nor a zombie (a killed Claude Code goes on
// answering kill 0 while the kernel tears it down, and after, when its
// parent, often a killed parley's, left it to an init that does not reap,
// as in a container), and started when the file says (procStart: field 22
// of /proc/<pid>/stat; a reused pid is another process).
func Alive(pid int, procStart string) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // no /proc here: the pid is alive, trust it
	}
	return aliveStat(string(b), procStart)
}

// ProcStart is when process pid started (field 22 of /proc/<pid>/stat, in
// clock ticks since boot), as Alive compares it: "" when it cannot be read.
func ProcStart(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	stat := string(b)
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return ""
	}
	const field = 22 - 3 // the fields after ')' start at field 3
	if f := strings.Fields(stat[i+1:]); len(f) > field {
		return f[field]
	}
	return ""
}

// pfExiting is the kernel's PF_EXITING flag (include/linux/sched.h): the
// process is in exit, killed or ending, and takes nothing more.
const pfExiting = 0x4

// aliveStat reads a /proc/<pid>/stat line: not exiting, not a zombie, and
// started at procStart when one is given.
func aliveStat(stat, procStart string) bool {
	// The command name (field 2) may hold spaces: count from its ')'.
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return true
	}
	f := strings.Fields(stat[i+1:]) // f[0] is field 3
	if len(f) > 0 && (f[0] == "Z" || f[0] == "X") {
		return false // exited, not yet reaped
	}
	if len(f) > 9-3 {
		if flags, err := strconv.ParseUint(f[9-3], 10, 64); err == nil && flags&pfExiting != 0 {
			return false
		}
	}
	if procStart == "" {
		return true
	}
	const field = 22 - 3
	return len(f) > field && f[field] == procStart
}

// ValidSessionID reports whether id can be a Claude Code session id (a
// UUID): it names a file, so nothing else is let near a path.
func ValidSessionID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == '-') {
			return false
		}
	}
	return true
}
