// Package hook is both ends of Claude Code's hooks for the tmux driver. Run is
// the hook command (`parley hook`): it appends the event Claude Code hands it to
// a spool file, synced, before it tries the network, and then pokes the daemon
// over a unix socket. The daemon side (Spool, Listen) reads the spool, so an
// event survives a daemon that is down or a hook killed mid-send.
// WriteSettings writes the per-session settings file passed with --settings,
// so a person's own settings are never edited.
package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Environment of the hook command.
const (
	EnvSpool  = "PARLEY_HOOK_SPOOL"  // the spool file to append to
	EnvSocket = "PARLEY_HOOK_SOCKET" // the daemon's unix socket to poke
)

// Events registered in the settings file.
var Events = []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "Notification", "PostToolUse", "Stop"}

// maxEvent bounds one event (a tool input can be big, not unbounded).
const maxEvent = 8 << 20

// Run is the hook command: stdin holds one JSON event.
func Run(ctx context.Context, stdin io.Reader, getenv func(string) string) error {
	spool := getenv(EnvSpool)
	if spool == "" {
		return fmt.Errorf("hook: %s is not set", EnvSpool)
	}
	b, err := io.ReadAll(io.LimitReader(stdin, maxEvent+1))
	if err != nil {
		return fmt.Errorf("hook: read stdin: %w", err)
	}
	if len(b) > maxEvent {
		return fmt.Errorf("hook: event larger than %d bytes", maxEvent)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, b); err != nil {
		return fmt.Errorf("hook: event is not JSON: %w", err)
	}
	compact.WriteByte('\n')
	if err := appendSynced(spool, compact.Bytes()); err != nil {
		return err
	}
	// The event is safe on disk; the poke is only a hint, so a daemon that is
	// down costs nothing but latency.
	if sock := getenv(EnvSocket); sock != "" {
		poke(ctx, sock)
	}
	return nil
}

func appendSynced(path string, line []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("hook: open spool: %w", err)
	}
	defer f.Close()
	// Hooks of one session can run at once: one whole line per writer.
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("hook: lock spool: %w", err)
	}
	if _, err := f.Write(line); err != nil {
		return fmt.Errorf("hook: write spool: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("hook: sync spool: %w", err)
	}
	return f.Close()
}

func poke(ctx context.Context, sock string) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		return
	}
	_ = c.SetDeadline(time.Now().Add(time.Second))
	_, _ = c.Write([]byte("1\n"))
	_ = c.Close()
}

// Event is one hook event, with the fields the driver reads.
type Event struct {
	Name             string          `json:"hook_event_name"`
	SessionID        string          `json:"session_id"`
	TranscriptPath   string          `json:"transcript_path"`
	Cwd              string          `json:"cwd"`
	Source           string          `json:"source,omitempty"`
	Prompt           string          `json:"prompt,omitempty"`
	ToolName         string          `json:"tool_name,omitempty"`
	ToolInput        json.RawMessage `json:"tool_input,omitempty"`
	ToolUseID        string          `json:"tool_use_id,omitempty"`
	NotificationType string          `json:"notification_type,omitempty"`
	Message          string          `json:"message,omitempty"`
	// Raw is the whole event as the hook received it.
	Raw json.RawMessage `json:"-"`
}

// Spool reads a spool file incrementally. It is not safe for concurrent use.
type Spool struct {
	path    string
	off     int64
	partial []byte
}

// OpenSpool reads path from its start (the events of a daemon that was down
// are there too).
func OpenSpool(path string) *Spool { return &Spool{path: path} }

// Read returns the events appended since the last Read. A missing file is no
// events yet; a line that is not JSON is skipped.
func (s *Spool) Read() ([]Event, error) {
	f, err := os.Open(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("hook: open spool: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(s.off, io.SeekStart); err != nil {
		return nil, fmt.Errorf("hook: seek spool: %w", err)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("hook: read spool: %w", err)
	}
	s.off += int64(len(b))
	b = append(s.partial, b...)
	s.partial = nil
	var out []Event
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			// A line still being written: keep it for the next Read.
			s.partial = append([]byte(nil), b...)
			break
		}
		line := b[:i]
		b = b[i+1:]
		var e Event
		if json.Unmarshal(line, &e) != nil {
			continue
		}
		e.Raw = append(json.RawMessage(nil), line...)
		out = append(out, e)
	}
	return out, nil
}

// Listener accepts the hooks' pokes on a unix socket.
type Listener struct {
	ln    net.Listener
	pokes chan struct{}
	wg    sync.WaitGroup
}

// Listen listens on a unix socket at path (removing a stale one).
func Listen(path string) (*Listener, error) {
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("hook: listen: %w", err)
	}
	l := &Listener{ln: ln, pokes: make(chan struct{}, 1)}
	l.wg.Add(1)
	go l.accept()
	return l, nil
}

func (l *Listener) accept() {
	defer l.wg.Done()
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		_ = c.Close()
		select {
		case l.pokes <- struct{}{}:
		default: // a poke is already pending; the reader reads everything anyway
		}
	}
}

// Pokes receives a value after one or more hooks have run.
func (l *Listener) Pokes() <-chan struct{} { return l.pokes }

// Close stops listening and waits for the accept loop.
func (l *Listener) Close() error {
	err := l.ln.Close()
	l.wg.Wait()
	return err
}

// Program is the hook command's own program, built from cmd/parley-hook.
const Program = "parley-hook"

// DefaultCommand is the hook command for the parley binary at exe: Program
// when it sits beside exe (one install, so one version), else exe's `hook`
// subcommand. Both run Run; Program starts without the whole binary's init.
func DefaultCommand(exe string) []string {
	p := filepath.Join(filepath.Dir(exe), Program)
	if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
		return []string{p}
	}
	return []string{exe, "hook"}
}

// Command builds the hook command line for the settings file. Claude Code runs
// hook commands through a shell, so every part is single-quoted: these are
// parley's own paths, never a person's text.
func Command(env map[string]string, argv []string) string {
	var parts []string
	for k, v := range env {
		parts = append(parts, k+"="+shellQuote(v))
	}
	// Stable order for the file (maps are unordered).
	slices.Sort(parts)
	for _, a := range argv {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// WriteSettings writes a Claude Code settings file that registers command for
// every event in Events.
func WriteSettings(path, command string) error {
	type cmd struct {
		Type    string `json:"type"`
		Command string `json:"command"`
	}
	type matcher struct {
		Matcher string `json:"matcher"`
		Hooks   []cmd  `json:"hooks"`
	}
	hooks := map[string][]matcher{}
	for _, e := range Events {
		hooks[e] = []matcher{{Matcher: "*", Hooks: []cmd{{Type: "command", Command: command}}}}
	}
	b, err := json.MarshalIndent(map[string]any{"hooks": hooks}, "", "  ")
	if err != nil {
		return fmt.Errorf("hook: settings: %w", err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("hook: settings: %w", err)
	}
	return nil
}
