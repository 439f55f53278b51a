// Package stream drives Claude Code through its structured mode: `claude -p`
// with stream-json on stdin and stdout and the control protocol (initialize,
// can_use_tool, interrupt, set_permission_mode, set_model), which is what the
// Claude Agent SDK speaks. One process serves one live session; its stdout is
// the only source of truth, and its stderr's tail explains a crash.
package stream

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/claudecode"
	"github.com/parleyhq/parley/internal/marks"
	"github.com/parleyhq/parley/internal/procgroup"
)

// MaxLineBytes bounds one stdout line. Claude Code puts whole tool results
// (file contents, command output) on one line, so the limit is generous.
const MaxLineBytes = 64 << 20

// stderrTailBytes is how much of stderr is kept for error reports.
const stderrTailBytes = 4 << 10

// Timeouts of the process's life.
const (
	initTimeout  = 60 * time.Second // initialize; a cold start takes about 0.5 s
	closeTimeout = 3 * time.Second  // stdin closed → exit, before the group is killed
	waitDelay    = 2 * time.Second  // after a kill, for the pipes to drain
)

// Driver starts Claude Code sessions. The zero value is not usable; use New.
type Driver struct {
	log *slog.Logger
}

// New returns a stream driver that logs to log.
func New(log *slog.Logger) *Driver {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Driver{log: log}
}

var (
	_ driver.Driver          = (*Driver)(nil)
	_ driver.SessionLister   = (*Driver)(nil)
	_ driver.DeliveryChecker = (*Driver)(nil)
)

// Args returns the command-line arguments the driver starts Claude Code with.
func Args(spec driver.Spec) []string {
	args := []string{
		"-p",
		"--input-format", "stream-json",
		"--output-format", "stream-json",
		"--verbose",
		"--permission-prompt-tool", "stdio",
		"--include-partial-messages",
		// Claude Code echoes each person's message once its turn took it
		// (after the first answer's block, in 2.1.197): evidence, see proof.
		"--replay-user-messages",
	}
	if spec.Mode != "" {
		args = append(args, "--permission-mode", spec.Mode)
	}
	if allowBypass(spec) {
		args = append(args, "--allow-dangerously-skip-permissions")
	}
	if spec.Model != "" {
		args = append(args, "--model", spec.Model)
	}
	if spec.ResumeID != "" {
		args = append(args, "--resume", spec.ResumeID)
	}
	return append(args, spec.Args...)
}

// OptionAllowBypass in Spec.Options ("true") lets a person switch the session
// to bypassPermissions later; without it Claude Code refuses that mode.
const OptionAllowBypass = "allow_bypass"

func allowBypass(spec driver.Spec) bool {
	return spec.Options[OptionAllowBypass] == "true" || spec.Mode == modeBypass
}

// proc is the live process behind a session.
type proc struct {
	*session
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	kill   context.CancelFunc
	tail   *tailBuffer
	done   chan struct{} // closed once Wait returned and the sink heard of it
	closed sync.Once
}

// Start starts `claude -p …` in spec.Cwd, sends initialize and returns once
// Claude Code answered it. A resume of a session Claude Code does not know
// fails with driver.ErrHistoryLost.
func (d *Driver) Start(ctx context.Context, spec driver.Spec, sink driver.Sink) (driver.Session, error) {
	log := spec.Logger
	if log == nil {
		log = d.log.With("thread", string(spec.ThreadID), "agent", spec.AgentID)
	}
	command := spec.Command
	if command == "" {
		command = "claude"
	}
	// The process outlives Start's ctx: it ends with Close, or is killed by kill.
	procCtx, kill := context.WithCancel(context.Background())
	// SIGKILL to the whole group (Claude Code's Bash tools go too): Close's
	// gentle end (stdin closed, a wait) came first, and Claude Code writes its
	// transcript as it goes, so the kill loses nothing resume needs
	// (procgroup says more).
	args := Args(spec)
	toolsDir := ""
	if spec.Tools != nil {
		// The session's own folder for parley's MCP config, gone with it.
		dir, err := os.MkdirTemp("", "parley-claude-")
		if err != nil {
			kill()
			return nil, fmt.Errorf("stream: %w", err)
		}
		toolsDir = dir
		targs, err := claudecode.ToolArgs(dir, *spec.Tools)
		if err != nil {
			kill()
			os.RemoveAll(dir)
			return nil, err
		}
		args = append(targs, args...)
	}
	removeTools := func() {
		if toolsDir != "" {
			os.RemoveAll(toolsDir)
		}
	}
	cmd := procgroup.Command(procCtx, syscall.SIGKILL, waitDelay, command, args...)
	cmd.Dir = spec.Cwd
	cmd.Env = append(os.Environ(), spec.Env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		kill()
		removeTools()
		return nil, fmt.Errorf("stream: stdin: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		kill()
		removeTools()
		return nil, fmt.Errorf("stream: stdout: %w", err)
	}
	tail := &tailBuffer{max: stderrTailBytes}
	cmd.Stderr = tail
	if err := cmd.Start(); err != nil {
		kill()
		removeTools()
		return nil, fmt.Errorf("stream: start %s: %w", command, err)
	}
	p := &proc{session: newSession(sink, log, allowBypass(spec)), cmd: cmd, stdin: stdin, kill: kill, tail: tail, done: make(chan struct{})}
	p.projects = projectDirs(spec)
	log.Info("claude started", "pid", cmd.Process.Pid, "resume", spec.ResumeID != "")

	readDone := make(chan struct{})
	go p.writeLoop()
	go func() {
		defer close(readDone)
		p.readLoop(stdout)
	}()
	go func() {
		<-readDone
		err := cmd.Wait()
		close(p.gone)
		kill()
		// What Claude Code left running in its group (its shells, MCP
		// servers: kill reaches the group only while Wait waits) ends
		// before the exit is reported, as with the ACP driver.
		ectx, ecancel := context.WithTimeout(context.Background(), 2*waitDelay)
		if err := procgroup.EndGroup(ectx, cmd.Process.Pid, waitDelay); err != nil {
			log.Warn("stream: end what is left of claude's processes", "err", err)
		}
		ecancel()
		removeTools()
		if err != nil {
			log.Info("claude exited", "err", err)
		} else {
			log.Info("claude exited")
		}
		p.exited(err, p.tail.String())
		close(p.done)
	}()

	ictx, cancel := context.WithTimeout(ctx, initTimeout)
	defer cancel()
	r, err := p.control(ictx, "initialize", nil)
	if err != nil {
		// A failed start reports through its error, not Exited (ready is false).
		p.kill()
		<-p.done
		msg := strings.TrimSpace(p.tail.String())
		if spec.ResumeID != "" && strings.Contains(msg, "No conversation found") {
			return nil, fmt.Errorf("stream: resume %s: %w: %s", spec.ResumeID, driver.ErrHistoryLost, msg)
		}
		if msg != "" {
			return nil, fmt.Errorf("stream: start: %w: %s", err, msg)
		}
		return nil, fmt.Errorf("stream: start: %w", err)
	}
	p.initialized(r)
	p.mu.Lock()
	gone := false
	select {
	case <-p.gone:
		gone = true
	default:
		p.ready = true
	}
	p.mu.Unlock()
	if gone {
		<-p.done
		return nil, fmt.Errorf("stream: start: claude exited right after initialize: %s", p.tail.String())
	}
	// Claude Code reports its mode only with a turn's system/init: say what it starts in.
	mode := spec.Mode
	if mode == "" {
		mode = "default"
	}
	model := spec.Model
	if model == "" && spec.ResumeID == "" {
		// A resumed session runs its transcript's model, not the default:
		// its system/init names it.
		model = "default"
	}
	p.setMode(mode, model)
	if spec.ResumeID != "" {
		p.mu.Lock()
		p.sessionID = spec.ResumeID
		p.mu.Unlock()
		sink.SessionID(spec.ResumeID)
	}
	return p, nil
}

// readLoop feeds stdout lines to the session until stdout ends.
func (p *proc) readLoop(stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLineBytes)
	for sc.Scan() {
		p.handleLine(sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		// A line past the limit: the stream cannot be trusted any more.
		p.log.Error("claude: reading stdout", "err", err)
		p.kill()
		_, _ = io.Copy(io.Discard, stdout)
	}
}

// writeLoop is the only writer to stdin.
func (p *proc) writeLoop() {
	for {
		select {
		case req := <-p.writes:
			if !req.claimed.CompareAndSwap(false, true) {
				continue // abandoned before it was written
			}
			t := marks.Start()
			_, err := p.stdin.Write(req.line)
			if !t.IsZero() {
				marks.End("stdin write", lineType(req.line), t)
			}
			if err != nil {
				err = fmt.Errorf("stream: write stdin: %w", err)
			}
			req.done <- err
		case <-p.gone:
			return
		}
	}
}

// Close ends the process: stdin closed, then the whole group killed if it
// lingers. It reports nothing more to the sink and is safe to call twice.
func (p *proc) Close(ctx context.Context) error {
	p.closed.Do(func() {
		p.mu.Lock()
		p.closing = true
		busy := p.turns > 0
		p.mu.Unlock()
		if busy {
			// With stdin closed Claude Code would finish the turn first: stop it.
			ictx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			_, _ = p.control(ictx, "interrupt", nil)
			cancel()
		}
		_ = p.stdin.Close()
		t := time.NewTimer(closeTimeout)
		defer t.Stop()
		select {
		case <-p.done:
		case <-t.C:
			p.kill()
		case <-ctx.Done():
			p.kill()
		}
	})
	<-p.done
	return nil
}

// Pid is the process id of Claude Code, for tests and diagnostics.
func (p *proc) Pid() int { return p.cmd.Process.Pid }

// PID is Pid for driver.Processor (the live agents list).
func (p *proc) PID() int { return p.Pid() }

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, b...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(b), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}
