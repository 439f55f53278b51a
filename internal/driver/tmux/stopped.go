package tmux

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// stoppedUnder reports whether the process reading the pane's terminal is
// stopped (SIGSTOP, or SIGTSTP without a shell to take the terminal back):
// a process in state T in the tree under pid (the pane's own process) and
// in the terminal's foreground process group (a stopped background job
// reads nothing from the terminal and holds nothing up). A stopped agent
// reads nothing: what is typed waits in the terminal's buffer, cannot be
// taken back from it, and lands whenever the agent goes on, glued to
// whatever is typed next. Where /proc cannot be read, nothing is reported
// stopped (the screen checks still hold).
func stoppedUnder(ctx context.Context, pid int) bool {
	defer begin(ctx)("/proc: is the agent stopped?")
	root, ok := procStat(pid)
	if !ok {
		return false
	}
	fg := root.tpgid
	seen := map[int]bool{}
	todo := []int{pid}
	for len(todo) > 0 && len(seen) < 256 {
		p := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if p <= 0 || seen[p] {
			continue
		}
		seen[p] = true
		if st, ok := procStat(p); ok && st.stopped() && st.pgrp == fg {
			return true
		}
		tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(p) + "/task/*/children")
		for _, task := range tasks {
			b, _ := os.ReadFile(task)
			for _, f := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(f); err == nil {
					todo = append(todo, c)
				}
			}
		}
	}
	return false
}

type stat struct {
	state       byte
	pgrp, tpgid int
}

// stopped: T is stopped by a signal (SIGSTOP, SIGTSTP), t is stopped under a
// tracer (a debugger); either way nothing reads the terminal.
func (st stat) stopped() bool { return st.state == 'T' || st.state == 't' }

// procStat reads /proc/<pid>/stat. The command name in parentheses may hold
// spaces and parentheses: the fields follow the last ')'.
func procStat(pid int) (stat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, false
	}
	return parseStat(b)
}

func parseStat(b []byte) (stat, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return stat{}, false
	}
	// state ppid pgrp session tty_nr tpgid …
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 6 || len(f[0]) != 1 {
		return stat{}, false
	}
	pgrp, err1 := strconv.Atoi(f[2])
	tpgid, err2 := strconv.Atoi(f[5])
	if err1 != nil || err2 != nil {
		return stat{}, false
	}
	return stat{state: f[0][0], pgrp: pgrp, tpgid: tpgid}, true
}
