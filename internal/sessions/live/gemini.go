package live

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Gemini CLI (0.61.0) writes no record of its running sessions and holds
// no file open (it appends to its chat and closes it each time), so they are
// told from the processes: a Gemini CLI of this folder (its GEMINI_CLI_HOME,
// else HOME, holds the folder) runs the session its --resume argument names,
// else the session whose chat, in the project folder of the process's
// working directory, began first after the process started: it begins its
// chat as it starts (a chat's header says when; a resumed session begins a
// stub file with its id), and a later chat there is another Gemini's (a
// `gemini -p`). A Gemini over ACP (--acp: parley's own, an editor's) is left
// out: its sessions are its client's to tell. A session switched to inside
// the TUI (/resume, /chat) is not told: the process keeps the one it began.

// geminiProc is a Gemini CLI process of this folder.
type geminiProc struct {
	pid     int
	cwd     string
	started time.Time
	resume  string // its --resume argument, when a session id
}

// Gemini maps session id to the pid of the Gemini CLI that runs it, for
// the Gemini CLI folder dir (~/.gemini, or $GEMINI_CLI_HOME/.gemini).
func Gemini(ctx context.Context, dir string) map[string]int {
	procs := procsOf(ctx, dir)
	if len(procs) == 0 {
		return nil
	}
	// The earliest started first, each taking the first chat begun after
	// it started that no earlier process took.
	slices.SortFunc(procs, func(a, b geminiProc) int { return a.started.Compare(b.started) })
	chats := map[string][]geminiChat{} // by project root
	out := map[string]int{}
	taken := map[string]bool{}
	for _, p := range procs {
		if p.resume != "" {
			if !taken[p.resume] {
				out[p.resume], taken[p.resume] = p.pid, true
			}
			continue
		}
		cs, ok := chats[p.cwd]
		if !ok {
			cs = chatsOf(dir, p.cwd)
			chats[p.cwd] = cs
		}
		var best *geminiChat
		for i, c := range cs {
			// The process's start is read to the second (boot time): slack.
			if !taken[c.id] && !c.started.Before(p.started.Add(-2*time.Second)) && (best == nil || c.started.Before(best.started)) {
				best = &cs[i]
			}
		}
		if best != nil {
			out[best.id], taken[best.id] = p.pid, true
		}
	}
	return out
}

// procs are this user's Gemini CLI processes of this folder, one per
// Gemini: it starts itself again as a child (Node's memory options), and
// the outer process stands for both.
func procsOf(ctx context.Context, gdir string) []geminiProc {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	boot := bootTime()
	found := map[int]geminiProc{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || ctx.Err() != nil {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		argv, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil {
			continue
		}
		resume, ok := geminiArgs(strings.Split(strings.TrimRight(string(argv), "\x00"), "\x00"))
		if !ok {
			continue
		}
		env, err := os.ReadFile(filepath.Join(dir, "environ")) // another user's: not readable, not ours
		if err != nil || filepath.Clean(geminiDirOf(env)) != filepath.Clean(gdir) {
			continue
		}
		cwd, err := os.Readlink(filepath.Join(dir, "cwd"))
		if err != nil {
			continue
		}
		st, ok := readStat(pid)
		if !ok || boot.IsZero() {
			continue
		}
		found[pid] = geminiProc{pid: pid, cwd: cwd, started: boot.Add(time.Duration(st.start) * time.Second / clockTicks), resume: resume}
	}
	var out []geminiProc
	for pid, p := range found {
		if st, ok := readStat(pid); ok {
			if _, child := found[st.ppid]; child {
				continue
			}
		}
		out = append(out, p)
	}
	return out
}

// geminiArgs tells a Gemini CLI command line (node running Gemini's script,
// or the script itself) and its --resume session id. One over ACP is not.
func geminiArgs(argv []string) (resume string, ok bool) {
	i := 0
	if len(argv) > 0 && strings.TrimSuffix(filepath.Base(argv[0]), ".exe") == "node" {
		for i = 1; i < len(argv) && strings.HasPrefix(argv[i], "-"); i++ {
		}
	}
	if i >= len(argv) {
		return "", false
	}
	script := argv[i]
	if b := filepath.Base(script); b != "gemini" && b != "gemini.js" && !strings.Contains(script, "/@google/gemini-cli/") {
		return "", false
	}
	args := argv[i+1:]
	for j, a := range args {
		switch {
		case a == "--acp" || a == "--experimental-acp":
			return "", false
		case (a == "--resume" || a == "-r") && j+1 < len(args):
			resume = args[j+1]
		case strings.HasPrefix(a, "--resume="):
			resume = strings.TrimPrefix(a, "--resume=")
		}
	}
	if len(resume) != 36 || strings.Count(resume, "-") != 4 {
		resume = "" // "latest" or an index: told from its chat instead
	}
	return resume, true
}

// GeminiDir is the Gemini CLI folder of process pid ("" when its
// environment cannot be read: gone, or another user's).
func GeminiDir(pid int) string {
	env, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
	if err != nil {
		return ""
	}
	return geminiDirOf(env)
}

// geminiDirOf is the Gemini CLI folder a process's environment gives it.
func geminiDirOf(environ []byte) string {
	home := ""
	for _, kv := range bytes.Split(environ, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("GEMINI_CLI_HOME=")); ok && len(v) > 0 {
			return filepath.Join(string(v), ".gemini")
		}
		if v, ok := bytes.CutPrefix(kv, []byte("HOME=")); ok {
			home = string(v)
		}
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".gemini")
}

// geminiChat is a chat's header: whose, and when it began.
type geminiChat struct {
	id      string
	started time.Time
}

// chatsOf reads the headers of the chats of the project whose root is cwd.
func chatsOf(gdir, cwd string) []geminiChat {
	roots, _ := filepath.Glob(filepath.Join(gdir, "tmp", "*", ".project_root"))
	var out []geminiChat
	for _, r := range roots {
		b, err := os.ReadFile(r)
		if err != nil || filepath.Clean(strings.TrimSpace(string(b))) != filepath.Clean(cwd) {
			continue
		}
		files, _ := filepath.Glob(filepath.Join(filepath.Dir(r), "chats", "session-*.jsonl"))
		for _, f := range files {
			if c, ok := readGeminiHeader(f); ok {
				out = append(out, c)
			}
		}
	}
	return out
}

// readGeminiHeader reads a chat's first line. A sub-agent's chat is none.
func readGeminiHeader(path string) (geminiChat, bool) {
	f, err := os.Open(path)
	if err != nil {
		return geminiChat{}, false
	}
	defer f.Close()
	line, err := bufio.NewReaderSize(f, 4096).ReadSlice('\n')
	if err != nil {
		return geminiChat{}, false
	}
	var h struct {
		SessionID string    `json:"sessionId"`
		StartTime time.Time `json:"startTime"`
		Kind      string    `json:"kind"`
	}
	if json.Unmarshal(line, &h) != nil || h.SessionID == "" || h.Kind == "subagent" {
		return geminiChat{}, false
	}
	return geminiChat{id: h.SessionID, started: h.StartTime}, true
}

// clockTicks is the unit of /proc/<pid>/stat's times (USER_HZ: 100 on Linux).
const clockTicks = 100

// bootTime is when the machine started (/proc/stat btime), or zero.
func bootTime() time.Time {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "btime "); ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				return time.Unix(n, 0)
			}
		}
	}
	return time.Time{}
}

// procStat is what is needed of /proc/<pid>/stat.
type procStat struct {
	ppid  int
	start uint64 // since boot, in clock ticks
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
	f := strings.Fields(string(b[i+1:])) // state(3) ppid(4) … starttime(22)
	if len(f) <= 22-3 {
		return procStat{}, false
	}
	ppid, err1 := strconv.Atoi(f[4-3])
	start, err2 := strconv.ParseUint(f[22-3], 10, 64)
	if err1 != nil || err2 != nil {
		return procStat{}, false
	}
	return procStat{ppid: ppid, start: start}, true
}
