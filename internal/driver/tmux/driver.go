// Package tmux is the driver for terminal agents: each session is a tmux session
// on parley's own server (`tmux -L parley`), or a person's existing session
// adopted by name. It types into the agent's TUI and proves every send by
// reading the screen back (package pane), follows the agent's transcript for
// its words and tool calls (package transcript), and hears Claude Code's hooks
// through a spool file (package hook). What it knows, it trusts in this order:
// the pane now, then the hook spool, then its own memory.
//
// The rules of evidence for a send (Prompt; see deliver):
//   - Nothing is typed while Claude Code works on a turn ("esc to interrupt"
//     under its box) or shows a menu: the text would go into its own queue.
//   - Submitted: Claude Code's UserPromptSubmit hook reports a prompt holding
//     the text after parley pressed Enter; without hooks (an adopted session),
//     a new occurrence of the text above the box in the whole history.
//   - Not submitted: Enter was never pressed, or the box still holds the text
//     alone after the agent drew again. Only then is the text typed again or
//     the send failed, and it is taken out of the box first (the box proven
//     empty), so it cannot go out later glued to the next message.
//   - Neither proven: the send keeps verifying; if it must end first (a stop,
//     the agent gone) it says so (driver.ErrUnverified), never "failed".
package tmux

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/claudecode"
	"github.com/parleyhq/parley/internal/driver/tmux/ctl"
	"github.com/parleyhq/parley/internal/driver/tmux/hook"
	"github.com/parleyhq/parley/internal/driver/tmux/pane"
	"github.com/parleyhq/parley/internal/driver/tmux/transcript"
)

// DefaultSocket is parley's own tmux server: `tmux -L parley attach -t <name>`.
const DefaultSocket = "parley"

// Spec.Options keys this driver reads.
const (
	OptAdopt   = "adopt"   // the name of an existing tmux session to drive instead of starting one
	OptSession = "session" // the tmux session name to use (default: from the thread id)
	OptHooks   = "hooks"   // "none" to start the agent without parley's hook settings
	// OptSocket names the tmux server (tmux -L) of this agent's sessions:
	// "default" is the person's own server, so adopt can take a session they
	// started with plain `tmux`. Default: parley's own server.
	OptSocket = "socket"
)

// Driver starts tmux sessions. The zero value is not usable: set StateDir.
type Driver struct {
	Socket  string // tmux -L name; "" is DefaultSocket
	TmuxBin string // "" is tmux on PATH
	// StateDir holds one folder per session: its settings file and hook spool.
	StateDir string
	// HookCommand is the hook program and its arguments (default:
	// hook.DefaultCommand of this executable); HookEnv is set for it (tests
	// re-exec themselves).
	HookCommand []string
	HookEnv     map[string]string
	// Width and Height of new sessions (default 120×40).
	Width, Height int
	// StepTimeout bounds each step of a send (paste seen, submit seen); default 3s.
	StepTimeout time.Duration
	// ReadyTimeout bounds waiting for the agent's input box at start; default 60s.
	ReadyTimeout time.Duration
	Logger       *slog.Logger
}

var (
	_ driver.Driver          = (*Driver)(nil)
	_ driver.DeliveryChecker = (*Driver)(nil)
)

// CheckDelivery implements driver.DeliveryChecker for Claude Code in a pane:
// a message parley was typing when it stopped reached it when the thread's
// own session's transcript holds it as its newest matching person prompt,
// recorded after the message went on its way (FindByPrompt). Another
// session in the same folder (another thread, the person's own claude) that
// got the same words proves nothing, and neither does a session whose id
// parley does not know yet. The pane outlives parley, so a prompt submitted
// may be kept a moment later: a transcript without it proves nothing.
func (d *Driver) CheckDelivery(_ context.Context, spec driver.Spec, m driver.Sent) (driver.Verdict, string) {
	if spec.ResumeID == "" {
		return driver.VerdictUnknown, "Claude Code had not named its session yet, so no transcript can say"
	}
	dir, err := claudecode.ConfigDir(spec.Env)
	if err != nil {
		return driver.VerdictUnknown, err.Error()
	}
	cwds := []string{spec.Cwd}
	if real, err := filepath.EvalSymlinks(spec.Cwd); err == nil && real != spec.Cwd {
		cwds = append(cwds, real) // Claude Code may name the folder after either
	}
	for _, cwd := range cwds {
		if p, _, ok := transcript.FindByPrompt(transcript.ProjectDir(dir, cwd), m.Text, m.At); ok && filepath.Base(p) == spec.ResumeID+".jsonl" {
			return driver.Delivered, "Claude Code's transcript holds it"
		}
	}
	return driver.VerdictUnknown, "no transcript of Claude Code's holds it, but the agent may have taken it and not kept it yet"
}

// New returns a driver on parley's own tmux server keeping per-session state
// (hook settings and spool) under stateDir. Its hook command is parley-hook
// beside this executable, else this executable's `hook` subcommand, which
// must call hook.Run.
func New(logger *slog.Logger, stateDir string) *Driver {
	return &Driver{StateDir: stateDir, Logger: logger}
}

var badName = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// SessionName derives a tmux session name from a thread id.
func SessionName(id chat.ThreadID) string {
	n := badName.ReplaceAllString(string(id), "-")
	n = strings.Trim(n, "-")
	if len(n) > 48 {
		sum := sha256.Sum256([]byte(id))
		n = n[:39] + "-" + hex.EncodeToString(sum[:4])
	}
	return "parley-" + n
}

func (d *Driver) client(logger *slog.Logger, sock string) (*ctl.Client, error) {
	if sock == "" {
		sock = d.Socket
	}
	if sock == "" {
		sock = DefaultSocket
	}
	return ctl.New(d.TmuxBin, sock, logger)
}

// Start starts (or adopts) a session and waits until its input box is up.
func (d *Driver) Start(ctx context.Context, spec driver.Spec, sink driver.Sink) (driver.Session, error) {
	logger := spec.Logger
	if logger == nil {
		logger = d.Logger
		if logger == nil {
			logger = slog.New(slog.DiscardHandler)
		}
		logger = logger.With("thread", spec.ThreadID, "agent", spec.AgentID)
	}
	logger = logger.With("transport", "tmux")
	c, err := d.client(logger, spec.Options[OptSocket])
	if err != nil {
		return nil, err
	}
	s := &session{
		d: d, c: c, sink: sink, log: logger,
		step:       orDuration(d.StepTimeout, 3*time.Second),
		answered:   map[string]bool{},
		preTool:    map[string]hook.Event{},
		stop:       make(chan struct{}),
		done:       make(chan struct{}),
		promptSeen: make(chan struct{}),
	}
	if p := spec.Options[OptPane]; p != "" {
		return s.startOnPane(ctx, spec, p)
	}
	adopt := spec.Options[OptAdopt]
	name := spec.Options[OptSession]
	switch {
	case adopt != "":
		name = adopt
	case name == "":
		name = SessionName(spec.ThreadID)
	}
	if !ctl.ValidName(name) {
		return nil, fmt.Errorf("tmux: invalid session name %q", name)
	}
	s.name = name
	s.spec = spec
	exists, err := c.HasSession(ctx, name)
	if err != nil {
		return nil, err
	}
	if adopt != "" && !exists {
		return nil, fmt.Errorf("tmux: adopt %q: %w", adopt, ctl.ErrNoSession)
	}
	if d.StateDir == "" {
		return nil, errors.New("tmux: driver has no state directory")
	}
	s.dir = filepath.Join(d.StateDir, name)
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, fmt.Errorf("tmux: state dir: %w", err)
	}
	spool := filepath.Join(s.dir, "hooks.jsonl")
	if !exists {
		// A spool left by an agent that is gone (it exited, or parley died
		// before it could tidy up) is that process's story, not the history
		// of the one started now: replayed, its SessionStart would follow the
		// transcript from the top and emit the whole conversation again.
		if err := os.Remove(spool); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("tmux: old hook spool: %w", err)
		}
	}
	s.spool = hook.OpenSpool(spool)
	useHooks := adopt == "" && spec.Options[OptHooks] != "none"
	s.useHooks = useHooks
	if useHooks {
		if s.hooks, err = hook.Listen(socketPath(s.dir)); err != nil {
			return nil, err
		}
	}
	if !exists {
		if err := s.create(ctx, spec, useHooks); err != nil {
			s.closeHooks()
			return nil, err
		}
		s.owned = true
	} else {
		// A session of ours that outlived a daemon (ours to end on Close), or
		// the person's own (never ended by parley). Its spool, if any, says
		// what happened while nobody listened.
		s.adopted = true
		s.owned = adopt == ""
	}
	// From here on every call names the pane itself: a session name given
	// to -t falls back to a prefix match once the session is gone, and would
	// type into another session ("foo" gone, "foobar" there).
	if s.pane, err = c.PaneID(ctx, name); err != nil {
		if s.owned {
			_ = c.KillSession(ctx, name)
		}
		s.closeHooks()
		return nil, s.goneErr(err)
	}
	if s.ctl, err = c.Attach(ctx, name); err != nil {
		if s.owned {
			_ = c.KillSession(ctx, name)
		}
		s.closeHooks()
		return nil, s.goneErr(err)
	}
	ready := orDuration(d.ReadyTimeout, readyTimeout)
	if exists {
		// Someone else's screen: whatever it shows now is what there is.
		ready = s.step
	}
	if err := s.waitReady(ctx, ready, exists); err != nil {
		s.shutdown(ctx)
		return nil, err
	}
	// Events from before this Start are history: they set state (the
	// transcript, tool ids) but end no turn of this session's.
	s.replaying = true
	s.readSpool()
	s.replaying = false
	go s.run()
	return s, nil
}

// readyTimeout is Driver.ReadyTimeout's default.
const readyTimeout = 60 * time.Second

func orDuration(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// socketPath keeps the unix socket path under the kernel's 108-byte limit.
func socketPath(dir string) string {
	p := filepath.Join(dir, "hook.sock")
	if len(p) < 100 {
		return p
	}
	sum := sha256.Sum256([]byte(dir))
	return filepath.Join(os.TempDir(), "parley-hook-"+hex.EncodeToString(sum[:8])+".sock")
}

func (s *session) create(ctx context.Context, spec driver.Spec, useHooks bool) error {
	argv, err := s.agentArgv(spec, spec.ResumeID, useHooks)
	if err != nil {
		return err
	}
	s.log.Info("starting tmux session", "session", s.name, "command", spec.Command)
	return s.c.NewSession(ctx, ctl.NewSessionOptions{
		Name: s.name, Cwd: spec.Cwd, Width: s.d.Width, Height: s.d.Height, Env: spec.Env, Argv: argv,
	})
}

// agentArgv is the agent's command line: with parley's hook settings (written
// to the session's folder) when useHooks, resuming resumeID when set.
func (s *session) agentArgv(spec driver.Spec, resumeID string, useHooks bool) ([]string, error) {
	if spec.Command == "" {
		return nil, errors.New("tmux: no agent command")
	}
	argv := []string{spec.Command}
	if spec.Tools != nil {
		// parley's MCP server, its config in the session's folder (0700).
		targs, err := claudecode.ToolArgs(s.dir, *spec.Tools)
		if err != nil {
			return nil, err
		}
		argv = append(argv, targs...)
	}
	if useHooks {
		settings := filepath.Join(s.dir, "settings.json")
		cmd := s.d.HookCommand
		if len(cmd) == 0 {
			exe, err := os.Executable()
			if err != nil {
				return nil, fmt.Errorf("tmux: hook command: %w", err)
			}
			cmd = hook.DefaultCommand(exe)
		}
		s.log.Debug("tmux: hook command", "program", cmd[0])
		env := map[string]string{hook.EnvSpool: filepath.Join(s.dir, "hooks.jsonl"), hook.EnvSocket: socketPath(s.dir)}
		for k, v := range s.d.HookEnv {
			env[k] = v
		}
		if err := hook.WriteSettings(settings, hook.Command(env, cmd)); err != nil {
			return nil, err
		}
		argv = append(argv, "--settings", settings)
	}
	if resumeID != "" {
		argv = append(argv, "--resume", resumeID)
	}
	if spec.Model != "" {
		argv = append(argv, "--model", spec.Model)
	}
	if spec.Mode != "" {
		argv = append(argv, "--permission-mode", spec.Mode)
	}
	return append(argv, spec.Args...), nil
}

// session is one tmux session serving a thread.
type session struct {
	d     *Driver
	c     *ctl.Client
	ctl   *ctl.Control
	sink  driver.Sink
	log   *slog.Logger
	name  string // the tmux session, for session-wide commands (always exact: =name)
	pane  string // its pane's id (%N), found at Start: the target of every read and key
	dir   string
	step  time.Duration
	hooks *hook.Listener
	spool *hook.Spool // read by run's goroutine and Start only
	owned bool        // parley's own session: Close kills it
	// adopted: it existed before Start (the person's, or ours from before a restart).
	adopted bool
	// placesOf is the adopted session's transcript, whose follower reports
	// how far it read (transcript.ReadTo); another the pane moves to does not.
	placesOf string
	// target, when set, is the session's id ($N) for session-wide commands
	// instead of name (an adopted pane's session: a person named it).
	target string
	// agentPID is an adopted pane's agent process, when known (OptAgentPID).
	agentPID int
	// dialect is whose screen the pane shows (OptTUI): Claude Code's but in
	// an adopted pane that says otherwise. Set at Start.
	dialect pane.Dialect
	spec    driver.Spec // what Start was asked for: an owned agent that exited is started again from it
	// beforeEnter, set only by this package's tests, runs right before each
	// Enter of a send: where a person's typing can land unseen.
	beforeEnter func()
	// onTimeline, set only by this package's benchmarks, gets each send's
	// timeline (timeline.go).
	onTimeline func([]Step, error)

	// kbd serializes everything that types: sends and card answers.
	//
	// Lock order (docs/locks.md): kbd, then draftMu, then mu. mu is
	// taken briefly under kbd (a send or an answer reading the card), never
	// kbd under mu: typing waits on tmux, and mu guards state the scanner
	// and the hook reader update while a send types.
	kbd sync.Mutex

	// draftMu orders the provisional text read from the pane (draft.go)
	// against the transcript's final words and the turn's end: it is held
	// while either is worked out and handed to the sink, so a draft read
	// before the final words (or the end) never reaches the sink after them.
	draftMu sync.Mutex
	drafts  drafts

	mu         sync.Mutex
	card       *openCard
	answered   map[string]bool       // card ids answered or gone: never shown again
	preTool    map[string]hook.Event // latest PreToolUse per tool name (from the spool)
	follower   *transcript.Follower
	transcript string
	// sent are the texts of parley's latest sends, newest last: a prompt
	// the chat records with one of them is parley's, not typed in the pane.
	sent      []string
	sessionID string // the agent's own, from its latest SessionStart hook
	turn      bool
	// With hooks, a turn ends when both the Stop hook and the transcript's end
	// of turn (written after the turn's words) have come, in either order, or
	// stopWait after the Stop hook if the transcript says nothing.
	stopSeen  bool
	endSeen   bool
	stopTimer *time.Timer
	closed    bool
	answering bool // an answer is pressing keys on the menu
	// onScreen is the live menu the scanner last saw ("" none), appearance
	// how many times a menu has left the screen: a card id read from the pane
	// alone names one appearance of a menu, not its content only.
	onScreen   string
	appearance uint64

	// prompts are the prompts Claude Code's UserPromptSubmit hook reported,
	// oldest first; promptSeen is closed (and replaced) at each. hooksWork:
	// a hook has been heard from this agent, so a submitted prompt will be.
	prompts     []string
	promptsGone int // prompts dropped from the front of prompts
	promptSeen  chan struct{}
	hooksWork   bool
	// sending is the text of the send in flight ("" none); turnPrompt the
	// prompt of the turn the hooks last saw start (see ownsTurn).
	sending    string
	turnPrompt string
	// entered: the send in flight has pressed Enter; endedEarly: without
	// hooks, the transcript ended its turn before the send's proof returned.
	entered, endedEarly bool
	// sendFrom is the number of the first prompt the send in flight can
	// own; turnAt the number of the running turn's prompt (-1: one replayed).
	sendFrom, turnAt int
	lastHook         time.Time // when the last hook event was read

	useHooks  bool           // Claude Code runs with parley's hook settings
	replaying bool           // Start is reading the spool's old events (before run starts)
	wg        sync.WaitGroup // background work besides run (finding a transcript)

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func (s *session) waitReady(ctx context.Context, d time.Duration, lenient bool) error {
	_, ok, err := s.waitFor(ctx, d, func(scr *pane.Screen) bool {
		if scr.HasBox() {
			return true
		}
		_, live, _ := scr.Menu()
		return live && lenient
	})
	if err != nil {
		return err
	}
	if !ok && !lenient {
		return fmt.Errorf("tmux: the agent's input box did not appear within %v", d)
	}
	return nil
}

func (s *session) SetMode(ctx context.Context, modeID string) error {
	return fmt.Errorf("tmux: set mode: %w", driver.ErrUnsupported)
}

func (s *session) SetConfigOption(ctx context.Context, id, value string) error {
	return fmt.Errorf("tmux: set %s: %w", id, driver.ErrUnsupported)
}

// Close ends the session: a session parley started is killed, an adopted one
// is only let go.
func (s *session) Close(ctx context.Context) error {
	var err error
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		close(s.stop)
		<-s.done
		s.wg.Wait()
		err = s.shutdown(ctx)
	})
	return err
}

func (s *session) shutdown(ctx context.Context) error {
	var err error
	if s.ctl != nil {
		_ = s.ctl.Close()
	}
	if s.owned {
		pid := 0
		if info, perr := s.c.Pane(ctx, s.pane); perr == nil {
			pid = info.PID
		}
		err = s.c.KillSession(ctx, s.name)
		if pid > 0 {
			reap(ctx, pid)
		}
	}
	s.closeHooks()
	if s.owned {
		// The agent is gone and nothing of it is left to read: its settings
		// and spool go too. (A daemon that dies never gets here, so a
		// session that outlives it keeps its spool.)
		_ = os.RemoveAll(s.dir)
	}
	s.mu.Lock()
	f := s.follower
	s.follower = nil
	s.mu.Unlock()
	if f != nil {
		_ = f.Close()
	}
	return err
}

func (s *session) closeHooks() {
	if s.hooks != nil {
		_ = s.hooks.Close()
		s.hooks = nil
	}
}

// reap waits for a killed pane's process to go (tmux sent it SIGHUP), then
// kills its process group: Close returns when the agent is gone.
func reap(ctx context.Context, pid int) {
	deadline := time.NewTimer(5 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for syscall.Kill(pid, 0) == nil {
		select {
		case <-tick.C:
		case <-deadline.C:
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			return
		case <-ctx.Done():
			return
		}
	}
}
