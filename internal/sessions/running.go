package sessions

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// procStat is what the listing needs of /proc/<pid>/stat.
type procStat struct {
	ppid int
}

// readStat reads /proc/<pid>/stat. The command name in parentheses may hold
// spaces and parentheses: the fields follow the last ')'.
func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(string(b[i+1:])) // state(3) ppid(4) …
	if len(f) < 2 {
		return procStat{}, false
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return procStat{}, false
	}
	return procStat{ppid: ppid}, true
}

// Pane is a tmux pane: its server (the socket's name, for tmux -L), its
// target as a person reads it ("session:window.pane") and its id (%N), the
// one name of it no person chose.
type Pane struct {
	Server, Target, ID string
}

// PaneFinder knows the tmux panes of this machine's tmux servers by the pid
// of the process each pane runs.
type PaneFinder map[int]Pane

// Find finds the pane pid runs in: the pane whose process is pid or one of
// its ancestors.
func (p PaneFinder) Find(pid int) (Pane, bool) {
	for q, n := pid, 0; q > 1 && n < 64; n++ {
		if w, ok := p[q]; ok {
			return w, true
		}
		st, ok := readStat(q)
		if !ok {
			break
		}
		q = st.ppid
	}
	return Pane{}, false
}

// Where says where pid runs: "tmux:SERVER:TARGET" when in a pane, else "pid:N".
func (p PaneFinder) Where(pid int) string {
	if w, ok := p.Find(pid); ok {
		return "tmux:" + w.Server + ":" + w.Target
	}
	return "pid:" + strconv.Itoa(pid)
}

// paneFormat is constant: what comes back is data, never given to tmux again.
const paneFormat = "#{pane_pid}\t#{pane_id}\t#{session_name}:#{window_index}.#{pane_index}"

// TmuxPanes asks every tmux server of this user (each socket in
// $TMUX_TMPDIR/tmux-UID, else /tmp/tmux-UID) for its panes. A server that
// does not answer (a stale socket) is left out.
func TmuxPanes(ctx context.Context) (PaneFinder, error) {
	dir := tmuxDir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return PaneFinder{}, nil // no tmux server has run
	}
	out := PaneFinder{}
	for _, e := range entries {
		if e.Type()&os.ModeSocket == 0 {
			continue
		}
		listPanes(ctx, filepath.Join(dir, e.Name()), e.Name(), out)
	}
	return out, nil
}

// tmuxDir is where this user's tmux servers keep their sockets (tmux -L).
func tmuxDir() string {
	tmp := os.Getenv("TMUX_TMPDIR")
	if tmp == "" {
		tmp = "/tmp"
	}
	return filepath.Join(tmp, fmt.Sprintf("tmux-%d", os.Getuid()))
}

func listPanes(ctx context.Context, socket, server string, into PaneFinder) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	b, err := exec.CommandContext(ctx, "tmux", "-S", socket, "list-panes", "-a", "-F", paneFormat).Output()
	if err != nil {
		return
	}
	for _, l := range strings.Split(string(b), "\n") {
		// The target last: a session's name may hold a tab.
		f := strings.SplitN(l, "\t", 3)
		if len(f) != 3 {
			continue
		}
		if n, err := strconv.Atoi(f[0]); err == nil && n > 0 {
			into[n] = Pane{Server: server, Target: f[2], ID: f[1]}
		}
	}
}

// Locate finds the tmux pane pid runs in. A process in a pane inherits
// TMUX (the server's socket) from it: only that server is asked, and the pane
// must be pid's or an ancestor's (the variable may be stale). A process
// without TMUX is in no pane of a server tmux -L can reach, and a machine
// may hold hundreds of stale sockets: none is asked.
func Locate(ctx context.Context, pid int) (Pane, bool) {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return Pane{}, false
	}
	for _, kv := range bytes.Split(env, []byte{0}) {
		v, ok := bytes.CutPrefix(kv, []byte("TMUX="))
		if !ok {
			continue
		}
		socket, _, _ := strings.Cut(string(v), ",")
		if filepath.Dir(socket) != tmuxDir() {
			return Pane{}, false // a server of tmux -S elsewhere: not one tmux -L names
		}
		panes := PaneFinder{}
		listPanes(ctx, socket, filepath.Base(socket), panes)
		return panes.Find(pid)
	}
	return Pane{}, false
}
