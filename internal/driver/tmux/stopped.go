package tmux

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// stoppedUnder reports whether a process in the tree under pid (the pane's
// own process and its descendants) is stopped (SIGSTOP, Ctrl+Z: state T).
// A stopped agent reads nothing: what is typed waits in the terminal's
// buffer, cannot be taken back from it, and lands whenever the agent goes
// on, glued to whatever is typed next. Where /proc cannot be read, nothing
// is reported stopped (the screen checks still hold).
func stoppedUnder(pid int) bool {
	seen := map[int]bool{}
	todo := []int{pid}
	for len(todo) > 0 && len(seen) < 256 {
		p := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if p <= 0 || seen[p] {
			continue
		}
		seen[p] = true
		if procState(p) == 'T' {
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

// procState is the state letter of /proc/<pid>/stat (0 if unreadable). The
// command name in parentheses may hold spaces and parentheses: the state
// follows the last ')'.
func procState(pid int) byte {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	return b[i+2]
}
