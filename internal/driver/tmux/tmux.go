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
	"encoding/json"
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
	// HookCommand is the hook program and its arguments (default: this
	// executable with "hook"); HookEnv is set for it (tests re-exec themselves).
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
// (hook settings and spool) under stateDir. Its hook command is this
// executable's `hook` subcommand, which must call hook.Run.
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
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("thread", spec.ThreadID, "transport", "tmux")
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
			cmd = []string{exe, "hook"}
		}
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
	spec    driver.Spec // what Start was asked for: an owned agent that exited is started again from it
	// beforeEnter, set only by this package's tests, runs right before each
	// Enter of a send: where a person's typing can land unseen.
	beforeEnter func()

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
	sessionID  string // the agent's own, from its latest SessionStart hook
	turn       bool
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

type openCard struct {
	id        string
	kind      string // chat.CardPermission or chat.CardQuestion
	menu      pane.Menu
	toolUseID string
	input     json.RawMessage // the tool's input from the PreToolUse hook: a card shows what it will do (an edit's diff)
	question  chat.Question
}

var _ driver.DeliveryProver = (*session)(nil)

// ProvesDelivery marks this driver's Prompt as the only proof of delivery (driver.DeliveryProver): agent output seen meanwhile may be a menu left open or a turn the person typed.
func (s *session) ProvesDelivery() {}

// Failure reasons, in the words a person sees on a failed receipt.
var (
	ErrBareShell = errors.New("the pane is a bare shell: nothing was typed")
	ErrKeyboard  = errors.New("something is holding the keyboard")
	ErrGone      = errors.New("tmux session is gone")
	// ErrStopped: the agent's process is stopped; nothing was typed.
	ErrStopped = fmt.Errorf("%w: the agent is stopped (SIGSTOP or Ctrl+Z) and did not continue; nothing was typed", ErrKeyboard)
)

var shells = map[string]bool{"bash": true, "sh": true, "zsh": true, "fish": true, "dash": true, "ksh": true, "tcsh": true, "csh": true, "nu": true}

// historyLines is how far back `parley debug pane` looks.
const historyLines = 3000

// capture reads the whole history: counting earlier prompts must not lose one
// off the top of a window while the new one comes in at the bottom (that would
// read a real send as not sent, and retyping would send it twice). Sessions
// parley starts keep 50,000 lines.
func (s *session) capture(ctx context.Context) (*pane.Screen, error) {
	out, err := s.query(ctx, ctl.CaptureArgs(s.pane, ctl.HistoryAll)...)
	if err != nil {
		return nil, s.goneErr(err)
	}
	return pane.Read(out), nil
}

func (s *session) captureVisible(ctx context.Context) (*pane.Screen, error) {
	out, err := s.query(ctx, ctl.CaptureArgs(s.pane, 0)...)
	if err != nil {
		return nil, s.goneErr(err)
	}
	return pane.Read(out), nil
}

func (s *session) paneInfo(ctx context.Context) (ctl.PaneInfo, error) {
	out, err := s.query(ctx, ctl.PaneArgs(s.pane)...)
	if err != nil {
		return ctl.PaneInfo{}, s.goneErr(err)
	}
	return ctl.ParsePane(out)
}

// query runs a read-only tmux command through the control client (no process
// to start: the send's re-checks stay cheap), or as a process without one.
func (s *session) query(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, ctl.DefaultTimeout)
	defer cancel()
	if s.ctl != nil {
		select {
		case <-s.ctl.Done():
			// The session (or its server) ended: a pane id on a server
			// started since may name someone else's pane.
			return "", fmt.Errorf("tmux: %s: %w", s.name, ctl.ErrNoSession)
		default:
			return s.ctl.Command(ctx, args...)
		}
	}
	return s.c.Run(ctx, args...)
}

func (s *session) goneErr(err error) error {
	if errors.Is(err, ctl.ErrNoSession) {
		return fmt.Errorf("%w: %w", ErrGone, driver.ErrNotRunning)
	}
	return err
}

// waitFor re-checks the visible screen at every output (and every prompt the
// hooks report) until cond holds or d passes. It returns the last screen and whether cond held.
func (s *session) waitFor(ctx context.Context, d time.Duration, cond func(*pane.Screen) bool) (*pane.Screen, bool, error) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		changed := s.ctl.Changed()
		s.mu.Lock()
		hooked := s.promptSeen
		s.mu.Unlock()
		scr, err := s.captureVisible(ctx)
		if err != nil {
			return nil, false, err
		}
		if cond(scr) {
			return scr, true, nil
		}
		select {
		case <-changed:
		case <-hooked:
		case <-timer.C:
			return scr, false, nil
		case <-ctx.Done():
			return scr, false, ctx.Err()
		case <-s.ctl.Done():
			return scr, false, fmt.Errorf("%w: %w", ErrGone, driver.ErrNotRunning)
		}
	}
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

// Prompt is the one send: leave copy-mode, check the pane, wait behind a live
// menu or a running turn, start a gone agent again (revive), clear staged
// text, paste, submit, and prove what became of it (see deliver).
func (s *session) Prompt(ctx context.Context, p driver.Prompt) error {
	if len(p.Images) > 0 {
		return fmt.Errorf("tmux: images cannot be typed into a terminal: %w", driver.ErrUnsupported)
	}
	if strings.TrimSpace(p.Text) == "" {
		return fmt.Errorf("tmux: empty message: %w", chat.ErrBadInput)
	}
	s.beginSend(p.Text)
	defer s.beginSend("")
	queued := ""
	for {
		if err := s.ready(ctx, p.MessageID, &queued); err != nil {
			return err
		}
		s.kbd.Lock()
		sent := time.Now()
		err := s.deliver(ctx, p.Text)
		s.kbd.Unlock()
		if errors.Is(err, errMenu) || errors.Is(err, errBusy) {
			continue // a menu came up, or a turn started, first: wait again
		}
		if err == nil {
			s.afterSubmit(p.Text, sent)
		}
		return err
	}
}

var (
	errMenu = errors.New("a menu is open")
	errBusy = errors.New("the agent is working")
)

// ready waits until the pane can take typing: no copy-mode, no live menu, no
// turn running, an agent running (not a dead pane or a shell: revive). A live
// menu or a running turn makes the message wait, reported once as queued.
func (s *session) ready(ctx context.Context, messageID string, queued *string) error {
	revived := false
	for {
		changed := s.ctl.Changed()
		info, err := s.paneInfo(ctx)
		if err != nil {
			return err
		}
		if info.InMode {
			// Enter is eaten in copy-mode.
			if err := s.c.ExitMode(ctx, s.pane); err != nil {
				return s.goneErr(err)
			}
			continue
		}
		if shells[info.CurrentCommand] || info.Dead {
			if revived && info.Dead {
				return fmt.Errorf("%w (even after starting the agent again)", ErrDeadPane)
			}
			if revived {
				return fmt.Errorf("%w (%s, even after starting the agent again)", ErrBareShell, info.CurrentCommand)
			}
			if err := s.revive(ctx, info); err != nil {
				return err
			}
			revived = true
			continue
		}
		scr, err := s.captureVisible(ctx)
		if err != nil {
			return err
		}
		m, live, _ := scr.Menu()
		var reason string
		switch {
		case stoppedUnder(info.PID):
			// Typed now, the text would wait unread in the terminal, out
			// of reach of any check or take-back, and land whenever the
			// agent goes on (glued to what comes next). A stop of a moment
			// is waited out; a longer one fails the send, nothing typed.
			wctx, cancel := context.WithTimeout(ctx, s.step)
			err := s.waitContinued(wctx)
			cancel()
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, context.DeadlineExceeded) {
				return ErrStopped
			} else if err != nil {
				return err
			}
			continue
		case live && m.Kind == pane.MenuPermission:
			reason = "a permission menu is open"
		case live:
			reason = "a question is waiting for an answer"
		case scr.Working() || s.hookTurn():
			// Typed now, the text would go into Claude Code's own queue.
			reason = "the agent is working on a turn"
		default:
			return nil
		}
		if *queued != reason {
			*queued = reason
			s.sink.Waiting(messageID, reason)
		}
		// The card scanner (run) sees the same change. The hooks' word that
		// a turn runs is trusted for hookTurnTrust after the last hook.
		s.mu.Lock()
		heard := s.promptSeen
		s.mu.Unlock()
		trust := time.NewTimer(hookTurnTrust)
		select {
		case <-changed:
		case <-heard:
		case <-trust.C:
		case <-ctx.Done():
			trust.Stop()
			return ctx.Err()
		case <-s.ctl.Done():
			trust.Stop()
			return fmt.Errorf("%w: %w", ErrGone, driver.ErrNotRunning)
		}
		trust.Stop()
	}
}

// stoppedPoll is how often a stopped agent is looked at again.
const stoppedPoll = 200 * time.Millisecond

// hookTurnTrust bounds how long the hooks' word that a turn runs (a
// UserPromptSubmit not yet ended by Stop) holds without another hook: it
// covers the moments Claude Code works but shows no "esc to interrupt" (a
// menu just answered, a prompt typed at the terminal not yet drawn).
const hookTurnTrust = 15 * time.Second

// hookTurn reports whether the hooks say a turn is running.
func (s *session) hookTurn() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.useHooks && s.hooksWork && s.turn && time.Since(s.lastHook) < hookTurnTrust
}

// deliver types text and proves what became of it. The rules of evidence:
//   - submitted: with hooks, Claude Code's UserPromptSubmit hook reported a
//     prompt holding the text after parley pressed Enter (the agent's own
//     word); without hooks, a new occurrence of the text above the box in the
//     whole history (position and novelty).
//   - not submitted: Enter was never pressed, or the box still holds exactly
//     the text after the agent has drawn since Enter. Only then is the text
//     taken back (the box proven empty) and typed again or failed.
//   - neither: the text left the box unseen, or the agent stopped drawing
//     after Enter. The send keeps verifying until ctx ends, and then says it
//     is unknown (errUnverified), never failed: it may yet be submitted.
func (s *session) deliver(ctx context.Context, text string) error {
	scr, err := s.captureVisible(ctx)
	if err != nil {
		return err
	}
	if _, live, _ := scr.Menu(); live {
		return errMenu
	}
	if scr.Working() {
		return errBusy
	}
	if !scr.HasBox() {
		var ok bool
		scr, ok, err = s.waitFor(ctx, s.step, (*pane.Screen).HasBox)
		if err != nil {
			return err
		}
		if !ok {
			if _, live, _ := scr.Menu(); live {
				return errMenu
			}
			return fmt.Errorf("%w: a dialog is holding the keyboard (no input box on the pane)", ErrKeyboard)
		}
	}
	// Novelty: only an occurrence the history did not have before counts.
	// The visible screen says when to look; the whole history decides.
	full, err := s.capture(ctx)
	if err != nil {
		return err
	}
	base := full.CountSubmitted(text)
	onScreen := func(scr *pane.Screen) bool {
		if scr.InBox(text) || !scr.ShowsAbove(text) {
			return false
		}
		full, err := s.capture(ctx)
		return err == nil && full.CountSubmitted(text) > base && !full.InBox(text)
	}
	mark, byHook := s.promptMark()
	submitted := func(scr *pane.Screen) bool {
		// The hook's word counts even when it is the first heard from this
		// agent (its SessionStart hook can come after its box shows): the
		// screen proof never sees a prompt glued to late typing.
		if s.promptSince(mark, text) {
			return true
		}
		// A redraw (a resize, SIGCONT) rewrites the history the screen proof
		// counts in; with hooks working, only their word counts.
		return !byHook && onScreen(scr)
	}
	for attempt := 1; attempt <= 2; attempt++ {
		if scr.Staged() != "" {
			if _, err = s.clear(ctx, scr); err != nil {
				return err
			}
		}
		outputs := s.ctl.Outputs()
		if err := s.c.Paste(ctx, s.pane, "parley-send", text); err != nil {
			return s.goneErr(err)
		}
		var ok bool
		scr, ok, err = s.waitFor(ctx, s.step, func(scr *pane.Screen) bool { return scr.InBox(text) || submitted(scr) })
		for err == nil && !ok && s.ctl.Outputs() == outputs && s.stopped(ctx) {
			// Stopped after ready looked: the paste waits unread in the
			// terminal, where nothing can take it back. It lands when the
			// agent goes on: wait for that and look again (never type it
			// again: it would be there twice).
			s.log.Info("the agent was stopped under the paste; waiting for it to continue")
			if err = s.waitContinued(ctx); err == nil {
				scr, ok, err = s.waitFor(ctx, s.step, func(scr *pane.Screen) bool { return scr.InBox(text) || submitted(scr) })
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				// Stopped before Enter: it did not reach the agent; take
				// the paste back so nobody submits it later.
				tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.step)
				_ = s.takeBack(tctx, text, err)
				cancel()
			}
			return err
		}
		if !ok {
			if s.ctl.Outputs() == outputs {
				// Nothing rendered at all: the agent is not reading its input
				// (stopped, hung). Take the paste back so it cannot land later;
				// the next send proves the box empty before it types.
				_ = s.c.SendKeysN(ctx, s.pane, "BSpace", clearCount(text))
				return fmt.Errorf("%w: the agent did not react to typing (nothing rendered)", ErrKeyboard)
			}
			if _, live, _ := scr.Menu(); live {
				return s.takeBack(ctx, text, errMenu)
			}
			continue // Enter was not pressed: typing again is safe
		}
		if submitted(scr) {
			return nil
		}
		// Typing may still be arriving: read the box once more with nothing
		// drawn meanwhile, right before Enter.
		for settle := 0; settle < 5; settle++ {
			o := s.ctl.Outputs()
			if scr, err = s.captureVisible(ctx); err != nil {
				return err
			}
			if s.ctl.Outputs() == o {
				break
			}
		}
		if !scr.BoxHolds(text) {
			// Our paste landed on leftover input (typing that arrived late):
			// submitting now would send both glued together.
			s.log.Info("the input box holds more than the message; clearing and retyping", "attempt", attempt)
			continue
		}
		if scr.Working() || s.hookTurn() {
			// A turn started under the paste (typed at the terminal): Enter
			// now would put the text in Claude Code's own queue.
			return s.takeBack(ctx, text, errBusy)
		}
		return s.submit(ctx, text, submitted)
	}
	return s.takeBack(ctx, text, fmt.Errorf("%w: the text stayed in the input box (other typing kept arriving); it was taken back", ErrKeyboard))
}

// stopped reports whether the agent's process (or one under the pane) is stopped.
func (s *session) stopped(ctx context.Context) bool {
	info, err := s.paneInfo(ctx)
	return err == nil && stoppedUnder(info.PID)
}

// waitContinued waits until no process under the pane is stopped.
func (s *session) waitContinued(ctx context.Context) error {
	tick := time.NewTicker(stoppedPoll)
	defer tick.Stop()
	for {
		stopped := s.stopped(ctx)
		if err := ctx.Err(); err != nil {
			return err // (a read cut short says nothing)
		}
		if !stopped {
			return nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.ctl.Done():
			return fmt.Errorf("%w: %w", ErrGone, driver.ErrNotRunning)
		}
	}
}

// submit presses Enter on the text in the box and verifies. It never types
// the text again: a second Enter is harmless (an empty box submits nothing),
// a second paste is not.
func (s *session) submit(ctx context.Context, text string, submitted func(*pane.Screen) bool) error {
	for enters := 1; ; enters++ {
		if s.beforeEnter != nil {
			s.beforeEnter()
		}
		outputs := s.ctl.Outputs()
		if err := s.c.SendKeys(ctx, s.pane, "C-m"); err != nil {
			return s.goneErr(err)
		}
		scr, ok, err := s.waitFor(ctx, s.step, submitted)
		if err != nil {
			return s.unverified(err)
		}
		if ok {
			return nil
		}
		drawn := s.ctl.Outputs() != outputs
		if !drawn && !scr.BoxHolds(text) {
			drawn = true // the box changed: it was drawn
		}
		switch {
		case drawn && scr.BoxHolds(text) && !scr.Working() && enters < 3:
			// Drawn since, and still the text alone in the box: Enter was
			// not taken (a redraw ate it). Press it again.
			s.log.Info("the text is still in the input box after Enter; pressing Enter again", "enters", enters)
			continue
		case drawn && scr.BoxHolds(text) && !scr.Working():
			return s.takeBack(ctx, text, fmt.Errorf("%w: the text stayed in the input box; it was taken back", ErrKeyboard))
		}
		// Not proven either way: the text left the box unseen, or nothing
		// draws any more (a stopped agent). Keep looking; only ctx ends it.
		s.log.Info("send not proven submitted nor proven not; still verifying", "drawn", drawn)
		return s.verify(ctx, text, submitted)
	}
}

// verify waits for the proof of a send whose fate is not known, at every
// change of the pane and every hook, until ctx ends. If the box is seen
// holding the text alone after the agent drew again, it was not submitted.
func (s *session) verify(ctx context.Context, text string, submitted func(*pane.Screen) bool) error {
	outputs := s.ctl.Outputs()
	for {
		scr, ok, err := s.waitFor(ctx, time.Hour, func(scr *pane.Screen) bool {
			return submitted(scr) || s.ctl.Outputs() != outputs && scr.BoxHolds(text) && !scr.Working()
		})
		if err != nil {
			return s.unverified(err)
		}
		if !ok {
			continue
		}
		if submitted(scr) {
			return nil
		}
		// The agent draws again and the text sits in its box: press Enter.
		return s.submit(ctx, text, submitted)
	}
}

// unverified wraps an error that ended a send whose fate is unknown.
func (s *session) unverified(err error) error {
	return fmt.Errorf("%w: %w", driver.ErrUnverified, err)
}

// takeBack empties the box of a text that was not submitted and returns why
// the send failed; a box that cannot be proven empty makes the failure say so.
func (s *session) takeBack(ctx context.Context, text string, why error) error {
	scr, err := s.captureVisible(ctx)
	if err != nil {
		return err
	}
	if scr.Staged() == "" {
		return why
	}
	if _, err := s.clear(ctx, scr); err != nil {
		return fmt.Errorf("%w (and the input box could not be emptied: %w)", why, err)
	}
	return why
}

func clearCount(text string) int { return len([]rune(text)) + strings.Count(text, "\n") + 8 }

// clear empties the input box with End, BSpace × N and Delete × N (C-u does
// not clear Claude Code's input), and proves it empty.
func (s *session) clear(ctx context.Context, scr *pane.Screen) (*pane.Screen, error) {
	empty := func(scr *pane.Screen) bool { return scr.HasBox() && scr.Staged() == "" }
	for round := 0; round < 3; round++ {
		if round > 0 {
			// A screen left garbled by a redraw (a stopped agent resumed)
			// can show in the box what is not in the input: Ctrl+L makes
			// Claude Code draw everything again, the input kept.
			if err := s.c.SendKeys(ctx, s.pane, "C-l"); err != nil {
				return nil, s.goneErr(err)
			}
			var ok bool
			var err error
			if scr, ok, err = s.waitFor(ctx, s.step, empty); err != nil {
				return nil, err
			} else if ok {
				return scr, nil
			}
		}
		staged := scr.Staged()
		n := clearCount(staged)
		if scr.PastedPlaceholder() {
			n += 16
		}
		// The cursor may be anywhere in the text (a person moved it): from
		// the end of its line, BSpace takes what is before it, Delete what
		// is after (the lines below).
		if err := s.c.SendKeys(ctx, s.pane, "End"); err != nil {
			return nil, s.goneErr(err)
		}
		if err := s.c.SendKeysN(ctx, s.pane, "BSpace", n); err != nil {
			return nil, s.goneErr(err)
		}
		if err := s.c.SendKeysN(ctx, s.pane, "DC", n); err != nil {
			return nil, s.goneErr(err)
		}
		var ok bool
		var err error
		scr, ok, err = s.waitFor(ctx, s.step, empty)
		if err != nil {
			return nil, err
		}
		if ok {
			return scr, nil
		}
	}
	return nil, fmt.Errorf("%w: the input box could not be cleared", ErrKeyboard)
}

// Cancel interrupts the turn (Escape) and withdraws the open card.
func (s *session) Cancel(ctx context.Context) error {
	s.kbd.Lock()
	defer s.kbd.Unlock()
	select {
	case <-s.ctl.Done():
		return fmt.Errorf("%w: %w", ErrGone, driver.ErrNotRunning)
	default:
	}
	if err := s.c.SendKeys(ctx, s.pane, "Escape"); err != nil {
		return s.goneErr(err)
	}
	s.mu.Lock()
	// The card is the lane's, closed with the stop; Escape left its menu.
	if card := s.card; card != nil {
		s.answered[card.id] = true
	}
	s.card = nil
	turn := s.turn
	s.turn = false
	s.mu.Unlock()
	if turn {
		s.draftMu.Lock()
		s.sink.TurnEnded(chat.StopCancelled)
		s.draftMu.Unlock()
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
