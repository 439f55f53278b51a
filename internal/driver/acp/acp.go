// Package acp is the driver for agents that speak the Agent Client Protocol
// (JSON-RPC over stdio): Gemini CLI (`gemini --acp`) natively, and Codex,
// OpenCode, Goose and others natively or through adapters. It starts the
// agent's command, maps session/update onto chat payloads, turns permission
// requests and form elicitations into cards, and serves the client-side file
// methods confined to the thread's working directory.
//
// What parley advertises in initialize is exactly what this package does:
// fs/read_text_file and fs/write_text_file (confined, symlinks resolved) and
// form elicitation (choices, text, numbers, booleans). terminal/* is not
// advertised: agents run commands themselves.
package acp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/procgroup"
)

// Options keys read from Spec.Options.
const (
	// OptAuthMethod names the ACP auth method to authenticate with
	// (e.g. "gemini-api-key"); empty: no authenticate call.
	OptAuthMethod = "auth_method"
	// OptMCPServers is the MCP servers for new sessions, as the JSON array
	// session/new takes.
	OptMCPServers = "mcp_servers"
)

// Version is what parley reports as clientInfo.
const Version = "0.1.0"

// How long things may take.
const (
	// initialize + session/new. Generous: OpenCode takes 30 s and more on
	// two busy cores, and a message waiting for a start is never failed for
	// the agent's slowness (the thread shows "starting" with its time); only
	// an agent that never answers is given up on.
	startTimeout  = 5 * time.Minute
	closeGrace    = 3 * time.Second // after stdin closes, before the process group is signalled
	killDelay     = 2 * time.Second // WaitDelay: after SIGTERM, before SIGKILL
	stderrTailLen = 4 << 10
)

// cancelGrace is how long after session/cancel parley waits for the agent to
// end the turn before it ends the turn itself (a variable for tests).
var cancelGrace = 5 * time.Second

// Driver starts ACP sessions. The zero value is not usable; call New.
type Driver struct {
	logger *slog.Logger
	tap    io.Writer
}

// Option configures a Driver.
type Option func(*Driver)

// WithTap copies every JSON-RPC line to w, prefixed "> " (to the agent) or
// "< " (from it): how the testdata transcripts were recorded. w must be safe
// for concurrent writes of whole lines.
func WithTap(w io.Writer) Option { return func(d *Driver) { d.tap = w } }

// New returns a driver that logs to logger (nil: discard).
func New(logger *slog.Logger, opts ...Option) *Driver {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	d := &Driver{logger: logger}
	for _, o := range opts {
		o(d)
	}
	return d
}

var _ driver.Driver = (*Driver)(nil)

// Start starts the agent, initializes it, authenticates when the config names
// a method, and opens (or resumes) a session in spec.Cwd.
func (d *Driver) Start(ctx context.Context, spec driver.Spec, sink driver.Sink) (driver.Session, error) {
	if spec.Command == "" {
		return nil, errors.New("acp: no command configured")
	}
	logger := spec.Logger
	if logger == nil {
		logger = d.logger.With("thread", string(spec.ThreadID), "agent", spec.AgentID)
	}
	logger = logger.With("driver", "acp")
	j, err := newJail(spec.Cwd)
	if err != nil {
		return nil, err
	}
	if spec, err = withGeminiSettings(spec); err != nil {
		return nil, err
	}
	if isGemini(spec) && spec.ResumeID != "" {
		if err := awaitGeminiLoad(ctx, spec, logger); err != nil {
			return nil, err
		}
	}
	s := &Session{
		logger: logger, sink: sink, spec: spec, jail: j, m: newMapper(),
		perms: map[string]*pendingCard{}, questions: map[string]*pendingCard{},
		exited: make(chan struct{}), drained: make(chan struct{}), replayTick: make(chan struct{}, 1),
	}
	if err := s.spawn(d.tap); err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := s.open(sctx); err != nil {
		s.shutdown()
		if tail := s.stderr.String(); tail != "" {
			return nil, fmt.Errorf("%w (agent stderr: %s)", err, tail)
		}
		return nil, err
	}
	s.wg.Add(1)
	go s.watch()
	return s, nil
}

// spawn starts the agent process in its own process group, wired through
// pipes the driver owns (so Wait never races the protocol reader).
func (s *Session) spawn(tap io.Writer) error {
	procCtx, cancel := context.WithCancel(context.Background())
	s.kill = cancel
	// SIGTERM to the whole tree (the agent's shells and MCP servers too), so a
	// Node agent can save its session files; killDelay later, SIGKILL for the
	// leader (procgroup says more).
	cmd := procgroup.Command(procCtx, syscall.SIGTERM, killDelay, s.spec.Command, s.spec.Args...)
	cmd.Dir = s.jail.root
	cmd.Env = append(os.Environ(), s.spec.Env...)
	cmd.Env = append(cmd.Env, ownServerEnv(s.spec.Command, cmd.Env)...) // listeners.go
	cmd.Stderr = &s.stderr
	inR, inW, err := os.Pipe()
	if err != nil {
		cancel()
		return fmt.Errorf("acp: stdin pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		cancel()
		inR.Close()
		inW.Close()
		return fmt.Errorf("acp: stdout pipe: %w", err)
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	if err := cmd.Start(); err != nil {
		cancel()
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return fmt.Errorf("acp: start %s: %w", s.spec.Command, err)
	}
	s.pgid = cmd.Process.Pid
	inR.Close()
	outW.Close()
	s.cmd, s.stdin, s.stdout = cmd, inW, outR
	var w io.Writer = &promptWatch{w: inW, s: s}
	var r io.Reader = outR
	if tap != nil {
		w = &tapWriter{w: w, tap: tap, prefix: "> "}
		r = io.TeeReader(outR, &tapWriter{w: io.Discard, tap: tap, prefix: "< "})
	}
	w = liftWriter{w: w}
	// The SDK starts reading at once but takes its logger after: hold the
	// first read back until the logger is set (else a data race in the SDK).
	g := &gate{r: r, open: make(chan struct{}), tail: []byte("\n" + drainedLine + "\n")}
	s.conn = sdk.NewClientSideConnection(&client{s: s}, w, g)
	s.conn.SetLogger(s.logger)
	close(g.open)
	go func() {
		s.waitErr = cmd.Wait()
		// What the agent wrote before it ended (its last words, a turn's
		// first update: the evidence it had the prompt) may still be in the
		// pipe or in the SDK's queue: it is all handled, the drain marker
		// after it, before the exit is reported. A child of the agent that
		// holds the pipe open keeps the end from coming: bounded.
		select {
		case <-s.drained:
		case <-time.After(killDelay):
		}
		outR.Close()
		close(s.exited)
	}()
	return nil
}

// shutdown ends the process: stdin closed, a grace period, then the group killed.
func (s *Session) shutdown() {
	s.stdin.Close()
	t := time.NewTimer(closeGrace)
	defer t.Stop()
	select {
	case <-s.exited:
	case <-t.C:
		s.kill()
		<-s.exited
	}
	s.kill()
	s.endGroup()
}

// endGroup ends what is left of the agent's process group once the agent is
// gone: the context's kill reaches the group only while Wait waits, so an
// agent that ended by itself (or was killed) leaves its children running
// (Claude's ACP adapter its CLI; shells, MCP servers), maybe still writing
// the session's files. They get SIGTERM, then SIGKILL after killDelay, and
// this waits until none runs: an exit reported, or Close returned, means no
// process of the agent's is left. (The group's id cannot be taken by another
// while a member lives; with none left this finds nothing.)
func (s *Session) endGroup() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*killDelay)
	defer cancel()
	if err := procgroup.EndGroup(ctx, s.pgid, killDelay); err != nil {
		s.logger.Warn("acp: end what is left of the agent's processes", "pgid", s.pgid, "err", err)
	}
}

// gate is a reader whose reads wait until open is closed, and which ends
// with tail (the drain marker) after its reader's end.
type gate struct {
	r    io.Reader
	open chan struct{}
	tail []byte
	eof  bool
}

func (g *gate) Read(p []byte) (int, error) {
	<-g.open
	if g.eof {
		if len(g.tail) == 0 {
			return 0, io.EOF
		}
		n := copy(p, g.tail)
		g.tail = g.tail[n:]
		return n, nil
	}
	n, err := g.r.Read(p)
	if err == io.EOF {
		g.eof = true
		err = nil
	}
	return n, err
}

// drainedMethod is the notification the gate adds after the agent's last
// line: the SDK handles notifications in order, so when the client sees it,
// everything the agent sent has been handled (Session.drained).
const drainedMethod = "_parley/drained"

var drainedLine = `{"jsonrpc":"2.0","method":"` + drainedMethod + `","params":{}}`

// tapWriter copies whole lines to a tap with a direction prefix.
type tapWriter struct {
	w      io.Writer
	tap    io.Writer
	prefix string
	buf    []byte
}

func (t *tapWriter) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	for {
		i := strings.IndexByte(string(t.buf), '\n')
		if i < 0 {
			break
		}
		line := append([]byte(t.prefix), t.buf[:i+1]...)
		_, _ = t.tap.Write(line)
		t.buf = t.buf[i+1:]
	}
	return t.w.Write(p)
}

// tail keeps the last bytes written to it (the agent's stderr).
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > stderrTailLen {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-stderrTailLen:]...)
	}
	return len(p), nil
}

// String is the tail, trimmed, for an error a person reads.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}

// PID is the agent's process (its group's leader), for driver.Processor.
func (s *Session) PID() int { return s.pgid }
