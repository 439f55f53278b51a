// Package plugin is the host of IM plugins: processes parley starts from its
// [[plugin]] config and supervises (restart with exponential backoff and jitter,
// a heartbeat watchdog, a status for /api/plugins). A plugin speaks ACP as the
// client on its stdin/stdout; parley is the agent (package acpagent), so a
// plugin's chats are routes in the same hub table as every other surface.
//
// Before anything reaches an agent the host looks at each prompt: a user not in
// the plugin's allowed_users is refused; a chat command (package commands) is
// answered by parley; a bare number answers the route's open card.
// Cards for a plugin that is down stay open in the store and are asked again
// on every (re)connection until they are resolved: that is the durable outbox.
package plugin

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/time/rate"

	"github.com/parleyhq/parley/internal/backoff"
	"github.com/parleyhq/parley/internal/channel/acpagent"
	"github.com/parleyhq/parley/internal/channel/commands"
	"github.com/parleyhq/parley/internal/channel/render"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/follow"
	"github.com/parleyhq/parley/internal/procgroup"
	"github.com/parleyhq/parley/internal/router"
)

// Router is what the host needs of the router.
type Router interface {
	acpagent.Router
	commands.Router
}

// Store is what the host reads.
type Store interface {
	acpagent.Store
	commands.Store
}

// Plugin states, as /api/plugins shows them.
const (
	StateStarting = "starting"
	StateRunning  = "running"
	StateBackoff  = "backoff" // exited; restarting after a delay
	StateStopped  = "stopped"
)

// Status is one plugin's state.
type Status struct {
	ID            string    `json:"id"`
	State         string    `json:"state"`
	PID           int       `json:"pid,omitempty"`
	Restarts      int       `json:"restarts"`
	LastError     string    `json:"last_error,omitempty"`
	Since         time.Time `json:"since"`
	LastHeartbeat time.Time `json:"last_heartbeat,omitzero"`
	NextStart     time.Time `json:"next_start,omitzero"`
}

// Options configure the host.
type Options struct {
	// Self is this parley binary, run for plugins whose command is "".
	Self    string
	Version string
	Logger  *slog.Logger
	// Backoff bounds the restart delay (defaults 500ms and 30s).
	MinBackoff, MaxBackoff time.Duration
}

// Host runs the plugins. Start once; Close stops them all.
type Host struct {
	r   Router
	st  Store
	hub follow.Hub
	opt Options
	log *slog.Logger

	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	status map[string]*Status
	order  []string
}

// New builds a host.
func New(r Router, st Store, h follow.Hub, opt Options) *Host {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.MinBackoff <= 0 {
		opt.MinBackoff = 500 * time.Millisecond
	}
	if opt.MaxBackoff <= 0 {
		opt.MaxBackoff = 30 * time.Second
	}
	return &Host{r: r, st: st, hub: h, opt: opt, log: opt.Logger, status: map[string]*Status{}}
}

// Start starts every enabled plugin under supervision.
func (h *Host) Start(plugins []config.Plugin) {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	for _, p := range plugins {
		if p.Disabled {
			continue
		}
		for _, w := range allowedWarnings(p) {
			h.log.Warn(w, "plugin", p.ID)
		}
		h.mu.Lock()
		h.status[p.ID] = &Status{ID: p.ID, State: StateStarting, Since: time.Now().UTC()}
		h.order = append(h.order, p.ID)
		h.mu.Unlock()
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			h.supervise(ctx, p)
		}()
	}
}

// Close stops every plugin and waits for them.
func (h *Host) Close() {
	if h.cancel != nil {
		h.cancel()
	}
	h.wg.Wait()
}

// Statuses returns every plugin's state, in config order.
func (h *Host) Statuses() []Status {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Status, 0, len(h.order))
	for _, id := range h.order {
		out = append(out, *h.status[id])
	}
	return out
}

// ServeHTTP answers GET /api/plugins with {"plugins": [...]}. The caller
// checks the token.
func (h *Host) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"plugins": h.Statuses()})
}

func (h *Host) setStatus(id string, f func(*Status)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.status[id]; s != nil {
		f(s)
	}
}

// supervise runs a plugin until ctx ends, restarting it when it exits. The delay
// doubles with each quick failure, up to MaxBackoff, with ±20% jitter; a run
// that lasted a minute resets it.
func (h *Host) supervise(ctx context.Context, p config.Plugin) {
	log := h.log.With("plugin", p.ID)
	cursors := acpagent.NewCursors() // what each chat was sent, across restarts
	fails := 0
	for {
		started := time.Now()
		err := h.run(ctx, p, cursors, log)
		if ctx.Err() != nil {
			h.setStatus(p.ID, func(s *Status) { s.State, s.PID, s.Since = StateStopped, 0, time.Now().UTC() })
			return
		}
		fails = nextFails(fails, time.Since(started))
		delay := restarts(h.opt.MinBackoff, h.opt.MaxBackoff).Delay(fails - 1)
		log.Warn("plugin exited; restarting", "err", err, "in", delay.Round(time.Millisecond))
		h.setStatus(p.ID, func(s *Status) {
			s.State, s.PID, s.Restarts, s.Since = StateBackoff, 0, s.Restarts+1, time.Now().UTC()
			s.NextStart = s.Since.Add(delay)
			if err != nil {
				s.LastError = err.Error()
			}
		})
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			h.setStatus(p.ID, func(s *Status) { s.State, s.Since = StateStopped, time.Now().UTC() })
			return
		case <-t.C:
		}
	}
}

// stableRun is how long a plugin must run for its next failure to count as the
// first again.
const stableRun = time.Minute

// nextFails counts a failure after a run of ran: a plugin that ran a minute
// was stable, so its restart delay starts over.
func nextFails(fails int, ran time.Duration) int {
	if ran > stableRun {
		return 1
	}
	return fails + 1
}

// restarts is the restart curve: min doubling with each quick failure,
// capped at max, with ±20% jitter.
func restarts(min, max time.Duration) backoff.Policy {
	return backoff.Policy{Min: min, Max: max, Jitter: backoff.Jitter{Low: 0.8, Width: 0.4}}
}

// run starts the process once and serves ACP on its stdio until it exits, stops
// answering pings, or ctx ends.
func (h *Host) run(ctx context.Context, p config.Plugin, cursors *acpagent.Cursors, log *slog.Logger) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	name := p.Command
	if name == "" {
		name = h.opt.Self
	}
	// SIGKILL: the plugin is parley's own child; closing its stdin is its
	// gentle end and its state is the daemon's (procgroup says more).
	cmd := procgroup.Command(ctx, syscall.SIGKILL, 3*time.Second, name, p.Args...)
	cmd.Env = os.Environ()
	for k, v := range p.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("plugin %s: %w", p.ID, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("plugin %s: %w", p.ID, err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return fmt.Errorf("plugin %s: %w", p.ID, err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("plugin %s: start: %w", p.ID, err)
	}
	pid := cmd.Process.Pid
	log = log.With("pid", pid)
	log.Info("plugin started")
	h.setStatus(p.ID, func(s *Status) {
		s.State, s.PID, s.Since, s.NextStart = StateRunning, pid, time.Now().UTC(), time.Time{}
	})
	var logs sync.WaitGroup
	logs.Add(1)
	go func() {
		defer logs.Done()
		logLines(stderr, log, time.Now)
	}()
	serveErr := acpagent.Serve(ctx, acpagent.Deps{Router: h.r, Store: h.st, Hub: h.hub}, acpagent.Options{
		Channel: p.ID, Agent: p.Agent, Config: p.Config, Gate: h.gate(p, log),
		Version: h.opt.Version, Logger: log, Heartbeat: p.Heartbeat.Duration, Cursors: cursors,
		OnHeartbeat: func(t time.Time) { h.setStatus(p.ID, func(s *Status) { s.LastHeartbeat = t.UTC() }) },
	}, stdout, stdin)
	// The connection is over: the process goes with it.
	cancel()
	stdin.Close()
	werr := cmd.Wait()
	logs.Wait()
	if serveErr != nil {
		return serveErr
	}
	if werr != nil {
		return fmt.Errorf("plugin %s: %w", p.ID, werr)
	}
	return errors.New("plugin exited")
}

// A plugin's stderr reaches the log at most this fast (lines a second, with a
// burst): a plugin printing in a loop must not fill the disk or drown parley's
// own lines. What is over is counted and said, never silently lost.
const (
	stderrPerSecond = 10
	stderrBurst     = 50
)

// logLines logs a plugin's stderr, line by line, bounded in length and rate; it
// reads to the end whatever it logs, so the plugin never blocks on stderr.
func logLines(r io.Reader, log *slog.Logger, now func() time.Time) {
	lim := rate.NewLimiter(stderrPerSecond, stderrBurst)
	dropped := 0
	sayDropped := func() {
		if dropped > 0 {
			log.Warn("plugin stderr: lines not logged", "lines", dropped,
				"limit", fmt.Sprintf("%d a second, bursts of %d", stderrPerSecond, stderrBurst))
			dropped = 0
		}
	}
	defer sayDropped()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if !lim.AllowN(now(), 1) {
			dropped++
			continue
		}
		sayDropped()
		line := sc.Text()
		if len(line) > 2000 {
			line = line[:2000] + "…"
		}
		log.Info("plugin stderr", "line", line)
	}
	if err := sc.Err(); err != nil {
		// An over-long line stops the reader: keep draining so the plugin never blocks.
		log.Warn("plugin stderr", "err", err)
		_, _ = io.Copy(io.Discard, r)
	}
}

// Refusal is what a user not allowed is told.
const Refusal = "Sorry, you are not allowed to talk to agents here. Ask the owner to add your user id to allowed_users."

// gate is the host's look at each prompt of plugin p.
func (h *Host) gate(p config.Plugin, log *slog.Logger) acpagent.Gate {
	runner := commands.Runner{Router: h.r, Store: h.st, Agent: p.Agent}
	return func(ctx context.Context, g acpagent.GateRequest) acpagent.GateReply {
		if !Allowed(p.AllowedUsers, g.User, g.Account) {
			log.Warn("refused a user not allowed", "user", g.User, "account", g.Account, "chat", g.Route.Chat)
			return acpagent.GateReply{Handled: true, Reply: Refusal}
		}
		cmd, ok, err := commands.Parse(g.Text)
		if ok {
			if err != nil {
				return acpagent.GateReply{Handled: true, Reply: err.Error()}
			}
			return acpagent.GateReply{Handled: true, Reply: runner.Run(ctx, g.Route, cmd)}
		}
		if reply, ok := h.answerByNumber(ctx, g); ok {
			return acpagent.GateReply{Handled: true, Reply: reply}
		}
		return acpagent.GateReply{}
	}
}

// AccountPrefix marks an allowed_users entry that names an account the
// platform vouches for (an IRC services account, from IRCv3 account tags)
// rather than a user id.
const AccountPrefix = "account:"

// Allowed says whether a prompt's sender may drive agents: some entry of
// allowed matches the user id, or, for an "account:" entry, the account. An
// entry is a glob: "*" is any run of characters, "?" any one; everything else
// is literal and matched without regard to case (IRC nicks and hosts, XMPP
// addresses are case-insensitive). An empty user is never allowed.
func Allowed(allowed []string, user, account string) bool {
	if user == "" {
		return false
	}
	for _, e := range allowed {
		if name, ok := strings.CutPrefix(e, AccountPrefix); ok {
			if account != "" && name != "" && glob(name, account) {
				return true
			}
			continue
		}
		if e != "" && glob(e, user) {
			return true
		}
	}
	return false
}

// glob matches s against pattern ('*' any run, '?' one character), ignoring case.
func glob(pattern, s string) bool {
	p, t := []rune(strings.ToLower(pattern)), []rune(strings.ToLower(s))
	// The classic two-pointer match with one backtrack point: linear enough
	// for config-sized patterns, and no recursion to blow up.
	pi, ti, star, mark := 0, 0, -1, 0
	for ti < len(t) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == t[ti]):
			pi++
			ti++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, ti
			pi++
		case star >= 0:
			pi, mark = star+1, mark+1
			ti = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// builtinIRC says whether p runs parley's own IRC plugin.
func builtinIRC(p config.Plugin) bool {
	return len(p.Args) >= 2 && p.Args[0] == "plugin" && p.Args[1] == "irc"
}

// allowedWarnings are what the owner is told at start about allowed_users
// entries that do not do what they seem to. For IRC, whose user ids are
// nick!user@host masks: a bare nick matches no one (anyone can take a free
// nick, so it is not enough on its own), and a mask whose user@host is all
// wildcards trusts whoever holds the nick.
func allowedWarnings(p config.Plugin) []string {
	var out []string
	if len(p.AllowedUsers) == 0 {
		out = append(out, "allowed_users is empty: everyone is refused")
	}
	if !builtinIRC(p) {
		return out
	}
	for _, e := range p.AllowedUsers {
		if strings.HasPrefix(e, AccountPrefix) {
			continue
		}
		nick, userHost, ok := strings.Cut(e, "!")
		if !ok || !strings.Contains(userHost, "@") {
			out = append(out, fmt.Sprintf("allowed_users entry %q is not a nick!user@host mask: it matches no one. "+
				"On IRC anyone can take a free nick, so write %q (the user and host you connect from) or %q (a services account)",
				e, nick+"!*@your.host", AccountPrefix+nick))
			continue
		}
		if strings.Trim(userHost, "*@") == "" {
			out = append(out, fmt.Sprintf("allowed_users entry %q trusts the nick alone: whoever takes the nick %q may drive agents", e, nick))
		}
	}
	return out
}

// answerByNumber answers the route's newest open card when the text is one of
// its option numbers. ok is false when the text is no such answer.
func (h *Host) answerByNumber(ctx context.Context, g acpagent.GateRequest) (string, bool) {
	if _, isNum := render.Choice(g.Text, 1<<30); !isNum {
		return "", false
	}
	id, err := h.r.ThreadOf(ctx, g.Route)
	if err != nil || id == "" {
		return "", false
	}
	open, err := h.st.Cards(ctx, id, chat.CardOpen)
	if err != nil || len(open) == 0 {
		return "", false
	}
	card := open[len(open)-1]
	c := router.Control{From: g.Route, Thread: id}
	label := ""
	switch card.Kind {
	case chat.CardPermission:
		var p chat.PermissionRequest
		if json.Unmarshal(card.Request, &p) != nil {
			return "", false
		}
		k, ok := render.Choice(g.Text, len(p.Options))
		if !ok {
			return fmt.Sprintf("Reply with a number from 1 to %d.", len(p.Options)), true
		}
		c.Permission = &router.PermissionAnswer{RequestID: p.RequestID, OptionID: p.Options[k].ID}
		label = p.Options[k].Label
	case chat.CardQuestion:
		var q chat.Question
		if json.Unmarshal(card.Request, &q) != nil || len(q.Questions) != 1 {
			return "", false
		}
		item := q.Questions[0]
		k, ok := render.Choice(g.Text, len(item.Options))
		if !ok {
			return fmt.Sprintf("Reply with a number from 1 to %d.", len(item.Options)), true
		}
		c.Answer = &router.QuestionAnswer{RequestID: q.RequestID, Answers: chat.Answers{item.Question: {Text: item.Options[k].Label}}}
		label = item.Options[k].Label
	default:
		return "", false
	}
	if err := h.r.Control(ctx, c); err != nil {
		if errors.Is(err, chat.ErrCardClosed) {
			return "That card is no longer open.", true
		}
		return "could not answer: " + err.Error(), true
	}
	return "Answered: " + label, true
}
