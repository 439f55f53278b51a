// Package ctl is parley's tmux client: every tmux call as an argument list with a
// timeout, on one named server (-L), plus a control-mode (-C) follower that says
// when a pane's output changes, so callers re-check the screen on events rather
// than on sleeps.
package ctl

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/parleyhq/parley/internal/procgroup"
)

// Format expansion (tmux 3.3a), audited for every call parley makes: no
// string a person chose (a folder, a message, a file name) may reach a place
// where tmux expands "#{…}" or runs "#(…)".
//
//   - new-session/respawn-pane -c (the start directory) IS expanded: never
//     passed; the pane runs `env -C <dir> -- argv` instead (StartArgv).
//   - new-session -s (the name) IS expanded; -t targets are not. Every session
//     name passes ValidName (no "#"), targets are "=name:", "=name" or "%N".
//   - the program's argv and -e KEY=VALUE (new-session, respawn-pane) are
//     not expanded: passed as they are.
//   - display-message -p FORMAT is expanded by design: only parley's own
//     constant formats (PaneArgs, "#{pane_current_path}"); what comes back is
//     data, never given to tmux again.
//   - set-option (without -F), show-environment, has-session, kill-session,
//     capture-pane, attach-session: nothing expanded; values are constants.
//   - send-keys (without -F) takes key names: parley sends only constants
//     and digits; a person's words go with -l (literal) or through
//     load-buffer (stdin, or a file of parley's own whose path is plain:
//     load-buffer IS expanded in its path) and paste-buffer -p; buffer names
//     pass ValidName.
//   - Control.Command builds tmux command syntax: each word single-quoted by
//     Quote (no expansion inside), and it carries only constants and targets.
//   - the socket name (-L) passes ValidName. The hook command Claude Code
//     runs (package hook) never passes through tmux: it is written to a
//     settings file, each word shell-quoted.

// ErrNoSession is returned when the tmux session (or its server) does not exist.
var ErrNoSession = errors.New("tmux session is gone")

// DefaultTimeout bounds one tmux call.
const DefaultTimeout = 5 * time.Second

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$`)

// ValidName reports whether s is safe as a tmux socket or session name: no
// characters tmux gives a meaning to in targets (":" "." "$" "%" "@") and no
// leading "-" that could read as a flag.
func ValidName(s string) bool { return nameRE.MatchString(s) }

// SessionTarget is the exact target of a session (and, for pane commands, its
// active pane): "=name:". A bare name given to -t falls back to a prefix
// match (and fnmatch) when no session has that name, so "foo" gone would
// name "foobar".
func SessionTarget(name string) string { return "=" + name + ":" }

var paneIDRE = regexp.MustCompile(`^%[0-9]+$`)

// PaneID returns the id (%N) of session name's active pane, found exactly.
func (c *Client) PaneID(ctx context.Context, name string) (string, error) {
	if !ValidName(name) {
		return "", fmt.Errorf("tmux: invalid session name %q", name)
	}
	info, err := c.Pane(ctx, SessionTarget(name))
	if err != nil {
		return "", err
	}
	if !paneIDRE.MatchString(info.ID) {
		return "", fmt.Errorf("tmux: session %s: unexpected pane id %q", name, info.ID)
	}
	return info.ID, nil
}

// Client runs tmux against one server socket name.
type Client struct {
	bin     string
	socket  string
	timeout time.Duration
	log     *slog.Logger
}

// New returns a client for `tmux -L socket`. bin "" means "tmux" on PATH.
func New(bin, socket string, logger *slog.Logger) (*Client, error) {
	if !ValidName(socket) {
		return nil, fmt.Errorf("tmux: invalid socket name %q", socket)
	}
	if bin == "" {
		bin = "tmux"
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Client{bin: bin, socket: socket, timeout: DefaultTimeout, log: logger}, nil
}

// Socket is the server's socket name.
func (c *Client) Socket() string { return c.socket }

// command builds a tmux client process in its own process group, killed as a
// group when ctx ends: a one-shot client holds nothing to save, and the tmux
// server is not in its group (procgroup says more).
func (c *Client) command(ctx context.Context, args ...string) *exec.Cmd {
	return procgroup.Command(ctx, syscall.SIGKILL, time.Second, c.bin, append([]string{"-L", c.socket}, args...)...)
}

// Run runs one tmux command and returns its standard output.
func (c *Client) Run(ctx context.Context, args ...string) (string, error) {
	return c.RunInput(ctx, nil, args...)
}

// RunInput is Run with stdin (for load-buffer -).
func (c *Client) RunInput(ctx context.Context, stdin io.Reader, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	cmd := c.command(ctx, args...)
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &errb
	err := cmd.Run()
	if err != nil {
		msg := strings.TrimSpace(errb.String())
		name := ""
		if len(args) > 0 {
			name = args[0]
		}
		if isGone(msg) {
			return out.String(), fmt.Errorf("tmux: %s: %s: %w", name, msg, ErrNoSession)
		}
		if ctx.Err() != nil {
			return out.String(), fmt.Errorf("tmux: %s: timed out: %w", name, ctx.Err())
		}
		return out.String(), fmt.Errorf("tmux: %s: %s: %w", name, msg, err)
	}
	return out.String(), nil
}

func isGone(msg string) bool {
	return strings.Contains(msg, "can't find session") ||
		strings.Contains(msg, "can't find pane") ||
		strings.Contains(msg, "can't find window") ||
		strings.Contains(msg, "no server running") ||
		strings.Contains(msg, "server exited unexpectedly") || // the last session just ended
		strings.Contains(msg, "lost server") ||
		strings.Contains(msg, "error connecting to") ||
		strings.Contains(msg, "session not found")
}

// NewSessionOptions describes a detached session to create.
type NewSessionOptions struct {
	Name          string
	Cwd           string // absolute; the program starts there (tmux is never told it: see StartArgv)
	Width, Height int
	Env           []string // KEY=VALUE, set in the session's environment
	Argv          []string // the program and its arguments, run without a shell
}

// NewSession creates a detached session running opts.Argv in opts.Cwd.
func (c *Client) NewSession(ctx context.Context, opts NewSessionOptions) error {
	if !ValidName(opts.Name) {
		return fmt.Errorf("tmux: invalid session name %q", opts.Name)
	}
	argv, err := StartArgv(opts.Cwd, opts.Argv)
	if err != nil {
		return err
	}
	w, h := opts.Width, opts.Height
	if w == 0 {
		w = 120
	}
	if h == 0 {
		h = 40
	}
	args := []string{"new-session", "-d", "-s", opts.Name, "-x", strconv.Itoa(w), "-y", strconv.Itoa(h)}
	for _, e := range opts.Env {
		args = append(args, "-e", e)
	}
	args = append(args, "--")
	args = append(args, argv...)
	if _, err := c.Run(ctx, args...); err != nil {
		return err
	}
	// Big history so counting submitted prompts is not undone by lines scrolling off.
	if _, err := c.Run(ctx, "set-option", "-t", SessionTarget(opts.Name), "history-limit", "50000"); err != nil {
		return err
	}
	return nil
}

// StartArgv is the command line a pane runs for argv in cwd: env(1) changes
// to the directory and execs the program. tmux's own -c is never used, for
// tmux expands formats in it: a folder named "#(cmd)" would run cmd, and any
// "#" would start the agent somewhere else. env also keeps a one-word argv
// from being handed to a shell (tmux does that with a single argument).
func StartArgv(cwd string, argv []string) ([]string, error) {
	if len(argv) == 0 {
		return nil, errors.New("tmux: no program")
	}
	if cwd == "" {
		return append([]string{"env", "--"}, argv...), nil
	}
	if !filepath.IsAbs(cwd) {
		return nil, fmt.Errorf("tmux: working directory %q is not absolute", cwd)
	}
	if st, err := os.Stat(cwd); err != nil {
		return nil, fmt.Errorf("tmux: working directory: %w", err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("tmux: working directory %q is not a directory", cwd)
	}
	return append([]string{"env", "-C", cwd, "--"}, argv...), nil
}

// HasSession reports whether the session exists.
func (c *Client) HasSession(ctx context.Context, name string) (bool, error) {
	if !ValidName(name) {
		return false, fmt.Errorf("tmux: invalid session name %q", name)
	}
	_, err := c.Run(ctx, "has-session", "-t", "="+name)
	if errors.Is(err, ErrNoSession) {
		return false, nil
	}
	if err != nil {
		// has-session exits 1 with "can't find session" (handled above); other errors are real.
		return false, err
	}
	return true, nil
}

// KillSession ends a session.
func (c *Client) KillSession(ctx context.Context, name string) error {
	_, err := c.Run(ctx, "kill-session", "-t", "="+name)
	if errors.Is(err, ErrNoSession) {
		return nil
	}
	return err
}

// KillServer ends the whole server (tests).
func (c *Client) KillServer(ctx context.Context) error {
	_, err := c.Run(ctx, "kill-server")
	if errors.Is(err, ErrNoSession) {
		return nil
	}
	return err
}

// PaneInfo is what tmux says about a pane.
type PaneInfo struct {
	ID             string // %N
	PID            int
	CurrentCommand string
	InMode         bool // copy-mode or another mode
	Dead           bool
	Width, Height  int
}

// Pane describes the active pane of target (a session name or a pane id).
func (c *Client) Pane(ctx context.Context, target string) (PaneInfo, error) {
	out, err := c.Run(ctx, PaneArgs(target)...)
	if err != nil {
		return PaneInfo{}, err
	}
	return ParsePane(out)
}

// PaneArgs is the display-message command behind Pane (for Control.Command).
func PaneArgs(target string) []string {
	return []string{"display-message", "-p", "-t", target,
		"#{pane_id}\t#{pane_pid}\t#{pane_current_command}\t#{pane_in_mode}\t#{pane_dead}\t#{pane_width}\t#{pane_height}"}
}

// ParsePane reads PaneArgs' output. tmux 3.3a's display-message prints
// nothing, and succeeds, for a target that does not exist: that is a gone pane.
func ParsePane(out string) (PaneInfo, error) {
	if strings.TrimSpace(out) == "" {
		return PaneInfo{}, fmt.Errorf("tmux: display-message: no such pane: %w", ErrNoSession)
	}
	f := strings.Split(strings.TrimRight(out, "\n"), "\t")
	if len(f) != 7 {
		return PaneInfo{}, fmt.Errorf("tmux: display-message: unexpected output %q", out)
	}
	pid, _ := strconv.Atoi(f[1])
	w, _ := strconv.Atoi(f[5])
	h, _ := strconv.Atoi(f[6])
	return PaneInfo{ID: f[0], PID: pid, CurrentCommand: f[2], InMode: f[3] == "1", Dead: f[4] == "1", Width: w, Height: h}, nil
}

// HistoryAll as Capture's start means the whole history.
const HistoryAll = math.MinInt32

// Capture returns the pane's text with escapes (-e), from history line start
// (0: the visible screen only; -N: N lines of history too; HistoryAll: all).
func (c *Client) Capture(ctx context.Context, target string, start int) (string, error) {
	return c.Run(ctx, CaptureArgs(target, start)...)
}

// CaptureArgs is the capture-pane command behind Capture (for Control.Command).
func CaptureArgs(target string, start int) []string {
	args := []string{"capture-pane", "-p", "-e", "-t", target}
	switch {
	case start == HistoryAll:
		args = append(args, "-S", "-")
	case start != 0:
		args = append(args, "-S", strconv.Itoa(start))
	}
	return args
}

// ExitMode leaves copy-mode (or any mode) if the pane is in one.
func (c *Client) ExitMode(ctx context.Context, target string) error {
	_, err := c.Run(ctx, "send-keys", "-t", target, "-X", "cancel")
	return err
}

// SendKeys sends key names (not literal text) to target.
func (c *Client) SendKeys(ctx context.Context, target string, keys ...string) error {
	_, err := c.Run(ctx, append([]string{"send-keys", "-t", target}, keys...)...)
	return err
}

// SendKeysN sends one key n times.
func (c *Client) SendKeysN(ctx context.Context, target, key string, n int) error {
	if n <= 0 {
		return nil
	}
	_, err := c.Run(ctx, "send-keys", "-t", target, "-N", strconv.Itoa(n), key)
	return err
}

// SendLiteral types text literally (-l): for short answers such as free text in a picker.
func (c *Client) SendLiteral(ctx context.Context, target, text string) error {
	_, err := c.Run(ctx, "send-keys", "-t", target, "-l", "--", text)
	return err
}

// Paste loads text into a named buffer from stdin and pastes it bracketed
// (-p), so newlines stay text, deleting the buffer afterwards (-d).
func (c *Client) Paste(ctx context.Context, target, buffer, text string) error {
	if !ValidName(buffer) {
		return fmt.Errorf("tmux: invalid buffer name %q", buffer)
	}
	if _, err := c.RunInput(ctx, strings.NewReader(text), "load-buffer", "-b", buffer, "-"); err != nil {
		return err
	}
	_, err := c.Run(ctx, "paste-buffer", "-p", "-d", "-b", buffer, "-t", target)
	return err
}

// Control is a control-mode client attached to one session. It turns the
// pane's %output notifications into a broadcast: Changed returns a channel
// that is closed at the next output after the call.
type Control struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	cancel context.CancelFunc
	done   chan struct{}
	log    *slog.Logger
	// attached takes the answer to the attach-session command itself, the
	// first block tmux prints (nil, or why it failed): Attach waits for it.
	attached chan error

	mu      sync.Mutex
	changed chan struct{}
	outputs uint64
	err     error
	// pending are the callers of Command, in the order their lines were
	// written: tmux answers a control client's commands in order.
	pending []chan result
	wmu     sync.Mutex // one writer on stdin; held while queueing, so order matches
	// Lock order (docs/locks.md): wmu, then mu (a command's line is
	// queued in pending under both); mu is a leaf.
}

type result struct {
	out []byte
	err error
}

// Attach starts `tmux -C attach -t session` and follows its output. It returns
// once tmux has taken the client, so every output after Attach reaches
// Changed. It lives until Close or until the session ends (Done).
func (c *Client) Attach(ctx context.Context, session string) (*Control, error) {
	if !ValidName(session) {
		return nil, fmt.Errorf("tmux: invalid session name %q", session)
	}
	return c.attach(ctx, "="+session)
}

var sessionIDRE = regexp.MustCompile(`^\$[0-9]+$`)

// AttachID is Attach by the session's id ($N, as tmux names it): a session
// found from a pane, whatever name a person gave it. (Attaching to the pane
// itself would make it the active pane under the person's eyes.)
func (c *Client) AttachID(ctx context.Context, id string) (*Control, error) {
	if !sessionIDRE.MatchString(id) {
		return nil, fmt.Errorf("tmux: invalid session id %q", id)
	}
	return c.attach(ctx, id)
}

// ValidPaneID reports whether s is a pane id as tmux names panes (%N).
func ValidPaneID(s string) bool { return paneIDRE.MatchString(s) }

func (c *Client) attach(ctx context.Context, session string) (*Control, error) {
	// The client outlives ctx, which bounds only the wait for the attach.
	cctx, cancel := context.WithCancel(context.Background())
	cmd := c.command(cctx, "-C", "attach-session", "-t", session)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		cancel()
		return nil, fmt.Errorf("tmux: control: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		return nil, fmt.Errorf("tmux: control: %w", err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("tmux: control: %w", err)
	}
	ctl := &Control{cmd: cmd, stdin: stdin, cancel: cancel, done: make(chan struct{}),
		changed: make(chan struct{}), log: c.log, attached: make(chan error, 1)}
	go ctl.read(stdout)
	// A control client hears output only once attached: without this wait,
	// what the pane printed between here and the attach would never reach
	// Changed. (A command sent now is no proof: tmux may run it even when
	// the attach failed, against some other session.)
	select {
	case err = <-ctl.attached:
	case <-ctl.done:
		err = ctl.Err()
	case <-time.After(attachTimeout):
		err = errors.New("tmux did not answer")
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		_ = ctl.Close()
		return nil, fmt.Errorf("tmux: control: attach to %s: %w", session, err)
	}
	return ctl, nil
}

// attachTimeout bounds Attach's wait for tmux to take the control client.
const attachTimeout = 10 * time.Second

func (ctl *Control) read(r io.Reader) {
	defer close(ctl.done)
	br := bufio.NewReaderSize(r, 64<<10)
	var block []byte // output of the command being answered
	inBlock, ours := false, false
	first := true     // the next block is the attach command's
	var endTag []byte // "<time> <number>" of the open block
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			switch {
			case inBlock:
				if tag, ok := blockEnd(line); ok && bytes.Equal(tag, endTag) {
					inBlock = false
					if first && !ours {
						first = false
						var e error
						if bytes.HasPrefix(line, []byte("%error")) {
							e = fmt.Errorf("%s: %w", strings.TrimSpace(string(block)), ErrNoSession)
						}
						ctl.attached <- e
					}
					if ours {
						var e error
						if bytes.HasPrefix(line, []byte("%error")) {
							e = fmt.Errorf("tmux: %s", strings.TrimSpace(string(block)))
							if isGone(string(block)) {
								e = fmt.Errorf("tmux: %s: %w", strings.TrimSpace(string(block)), ErrNoSession)
							}
						}
						ctl.answer(result{out: block, err: e})
					}
					block = nil
					continue
				}
				block = append(block, line...)
			case bytes.HasPrefix(line, []byte("%begin ")):
				f := strings.Fields(string(line))
				inBlock, block = true, nil
				ours = len(f) == 4 && f[3] == "1"
				if len(f) >= 3 {
					endTag = []byte(f[1] + " " + f[2])
				}
			case bytes.HasPrefix(line, []byte("%output ")), bytes.HasPrefix(line, []byte("%extended-output ")),
				bytes.HasPrefix(line, []byte("%layout-change")), bytes.HasPrefix(line, []byte("%window-pane-changed")):
				ctl.bump()
			case bytes.HasPrefix(line, []byte("%exit")):
				ctl.setErr(ErrNoSession)
			}
		}
		if err != nil {
			ctl.setErr(ErrNoSession)
			ctl.bump()
			ctl.failPending()
			_ = ctl.cmd.Wait()
			return
		}
	}
}

// blockEnd returns the "<time> <number>" of an %end or %error line.
func blockEnd(line []byte) ([]byte, bool) {
	var rest []byte
	switch {
	case bytes.HasPrefix(line, []byte("%end ")):
		rest = line[len("%end "):]
	case bytes.HasPrefix(line, []byte("%error ")):
		rest = line[len("%error "):]
	default:
		return nil, false
	}
	f := strings.Fields(string(rest))
	if len(f) < 2 {
		return nil, false
	}
	return []byte(f[0] + " " + f[1]), true
}

func (ctl *Control) answer(r result) {
	ctl.mu.Lock()
	if len(ctl.pending) == 0 {
		ctl.mu.Unlock()
		return
	}
	ch := ctl.pending[0]
	ctl.pending = ctl.pending[1:]
	ctl.mu.Unlock()
	ch <- r
}

func (ctl *Control) failPending() {
	ctl.mu.Lock()
	p := ctl.pending
	ctl.pending = nil
	ctl.mu.Unlock()
	for _, ch := range p {
		ch <- result{err: fmt.Errorf("tmux: control client ended: %w", ErrNoSession)}
	}
}

// Command runs one tmux command through the control client, without starting
// a process: for reading (capture-pane, display-message) and fixed words
// (key names, paste-buffer). Its arguments are tmux command syntax, so it
// never carries a person's text; callers quote with Quote. A person's text
// goes through exec'd tmux calls with argument lists.
func (ctl *Control) Command(ctx context.Context, args ...string) (string, error) {
	ch := make(chan result, 1)
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(Quote(a))
	}
	b.WriteByte('\n')
	ctl.wmu.Lock()
	select {
	case <-ctl.done:
		ctl.wmu.Unlock()
		return "", fmt.Errorf("tmux: control client ended: %w", ErrNoSession)
	default:
	}
	ctl.mu.Lock()
	ctl.pending = append(ctl.pending, ch)
	ctl.mu.Unlock()
	_, err := io.WriteString(ctl.stdin, b.String())
	ctl.wmu.Unlock()
	if err != nil {
		// The reader fails every pending caller when the client ends.
		return "", fmt.Errorf("tmux: control: write: %w", ErrNoSession)
	}
	select {
	case r := <-ch:
		return string(r.out), r.err
	case <-ctx.Done():
		return "", ctx.Err()
	case <-ctl.done:
		select {
		case r := <-ch:
			return string(r.out), r.err
		default:
			return "", fmt.Errorf("tmux: control client ended: %w", ErrNoSession)
		}
	}
}

// Quote makes a tmux command-syntax word of s (single quotes; tmux has no
// escapes inside them, so a quote closes, is escaped, and reopens).
func Quote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_=%/.,:", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func (ctl *Control) bump() {
	ctl.mu.Lock()
	ctl.outputs++
	close(ctl.changed)
	ctl.changed = make(chan struct{})
	ctl.mu.Unlock()
}

func (ctl *Control) setErr(err error) {
	ctl.mu.Lock()
	if ctl.err == nil {
		ctl.err = err
	}
	ctl.mu.Unlock()
}

// Changed returns a channel closed at the next pane output after this call.
// Take it before capturing, then wait on it if the capture is not yet right.
func (ctl *Control) Changed() <-chan struct{} {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	return ctl.changed
}

// Outputs counts output notifications so far (a cheap "did anything render").
func (ctl *Control) Outputs() uint64 {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	return ctl.outputs
}

// Done is closed when the control client ends (session gone or Close).
func (ctl *Control) Done() <-chan struct{} { return ctl.done }

// Err says why the control client ended, once Done is closed.
func (ctl *Control) Err() error {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	return ctl.err
}

// Close detaches the client and waits for it.
func (ctl *Control) Close() error {
	_ = ctl.stdin.Close() // an EOF on stdin makes a control client detach
	select {
	case <-ctl.done:
	case <-time.After(2 * time.Second):
		ctl.cancel()
		<-ctl.done
	}
	ctl.cancel()
	return nil
}
