// A session that runs in a person's terminal, taken by a thread without
// starting another process on it: adopted (a tmux pane, which the tmux driver
// types into) or watched (a plain terminal, followed read-only).

package router

import (
	"context"
	"fmt"
	"maps"
	"strconv"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/claudecode"
	"github.com/parleyhq/parley/internal/driver/tmux"
	"github.com/parleyhq/parley/internal/driver/watch"
	"github.com/parleyhq/parley/internal/sessions"
	"github.com/parleyhq/parley/internal/store"
)

// TransportWatch is the driver (Options.Drivers) of watched sessions.
const TransportWatch = "watch"

// Terminal kinds.
const (
	termAdopt = "adopt" // a tmux pane: driven by the tmux driver
	termWatch = "watch" // a plain terminal: read-only
)

// terminal is the person's process a thread follows instead of its own.
// The lane owns it; it lasts while that process runs (its exit, or a hand
// back, drops it: the thread then continues the session itself).
type terminal struct {
	kind   string
	pid    int
	start  string // when pid started (/proc/<pid>/stat): a reused pid is another process
	server string // adopt: the tmux server's socket name (tmux -L)
	pane   string // adopt: the pane's id, %N
	// at: the byte of the session's transcript after the last whole record
	// the thread shows (watch.ReadTo; 0: not known), kept so that a restart
	// shows what the session wrote while parley was stopped.
	at int64
}

// same reports that t and u are one process followed the same way, wherever
// each has read to.
func (t terminal) same(u terminal) bool {
	t.at, u.at = 0, 0
	return t == u
}

// inPane reports that the lane drives a person's tmux pane: a card withdrawn
// there went by a key the person pressed at it.
func (l *lane) inPane() bool { return l.term != nil && l.term.kind == termAdopt }

// answeredThere is how card c closes when it was answered in the terminal.
func answeredThere(c *chat.Card) chat.Payload {
	const reason = "answered in the terminal"
	if c.Kind == chat.CardQuestion {
		return chat.QuestionResolved{RequestID: c.RequestID, Reason: reason}
	}
	return chat.PermissionResolved{RequestID: c.RequestID, Reason: reason}
}

// attachment is t as the store keeps it for thread (reattach.go).
func (t *terminal) attachment(thread chat.ThreadID) *store.Attachment {
	return &store.Attachment{Thread: thread, Kind: t.kind, PID: t.pid, ProcStart: t.start, Server: t.server, Pane: t.pane, TranscriptAt: t.at}
}

// terminalOf finds the process that runs spec.ResumeID now, when it is not
// parley's, and what a thread can do with it: adopt its tmux pane, or watch
// it (watch asked, or no pane). nil: nothing runs it, or parley does, or a
// plain terminal does and watch was not asked (notRunningElsewhere says why).
func (r *Router) terminalOf(ctx context.Context, drv driver.Driver, spec driver.Spec, watchIt bool) (*terminal, error) {
	rc, ok := drv.(driver.TerminalTaker)
	if pa, pok := drv.(driver.PaneAdopter); !ok && pok && !watchIt && pa.PaneTUI(spec) != "" {
		return r.paneOf(ctx, pa, spec)
	}
	if !ok {
		if watchIt {
			return nil, fmt.Errorf("%w: agent %q's running sessions cannot be watched (only Claude Code's are)", driver.ErrUnsupported, spec.AgentID)
		}
		return nil, nil
	}
	pid, err := rc.RunningNow(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", chat.ErrBadInput, err)
	}
	if pid == 0 {
		if watchIt {
			return nil, fmt.Errorf("%w: %s session %s runs nowhere now: continue it instead", chat.ErrBadInput, spec.AgentID, spec.ResumeID)
		}
		return nil, nil
	}
	for _, s := range r.slots.list() {
		if s.PID == pid {
			return nil, nil // parley's own process: its thread holds the session
		}
	}
	start := claudecode.ProcStart(pid)
	if watchIt {
		return &terminal{kind: termWatch, pid: pid, start: start}, nil
	}
	if p, ok := sessions.Locate(ctx, pid); ok && p.ID != "" {
		return &terminal{kind: termAdopt, pid: pid, start: start, server: p.Server, pane: p.ID}, nil
	}
	return nil, nil
}

// paneOf is terminalOf for an agent whose TUI only the tmux driver reads
// (driver.PaneAdopter): its tmux pane is adopted; anything else running the
// session is left to notRunningElsewhere, which refuses it.
func (r *Router) paneOf(ctx context.Context, pa driver.PaneAdopter, spec driver.Spec) (*terminal, error) {
	pid, err := pa.RunningNow(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", chat.ErrBadInput, err)
	}
	if pid == 0 {
		return nil, nil
	}
	for _, s := range r.slots.list() {
		if s.PID == pid {
			return nil, nil // parley's own process: its thread holds the session
		}
	}
	if p, ok := sessions.Locate(ctx, pid); ok && p.ID != "" {
		return &terminal{kind: termAdopt, pid: pid, start: claudecode.ProcStart(pid), server: p.Server, pane: p.ID}, nil
	}
	return nil, nil
}

// driver is the thread's driver and agent: its agent's, or the one that
// drives or watches the person's terminal it follows.
func (l *lane) driver() (driver.Driver, config.Agent, error) {
	drv, ag, err := l.r.Driver(l.th.Agent)
	if err != nil || l.term == nil {
		return drv, ag, err
	}
	t := config.TransportTmux
	if l.term.kind == termWatch {
		t = TransportWatch
	}
	d, ok := l.r.opt.Drivers[t]
	if !ok {
		return nil, ag, fmt.Errorf("%w: this parley has no %s driver to %s a terminal's session", driver.ErrUnsupported, t, l.term.kind)
	}
	return d, ag, nil
}

// termOptions adds to spec what its driver needs of the terminal.
func (l *lane) termOptions(spec *driver.Spec) {
	t := l.term
	if t == nil {
		return
	}
	opts := maps.Clone(spec.Options)
	if opts == nil {
		opts = map[string]string{}
	}
	switch t.kind {
	case termAdopt:
		// Only the pane: the agent's own tmux options (adopt, session,
		// hooks) are of sessions parley starts.
		opts = map[string]string{tmux.OptPane: t.pane, tmux.OptSocket: t.server, tmux.OptAgentPID: strconv.Itoa(t.pid)}
		if t.at > 0 {
			opts[tmux.OptFrom] = strconv.FormatInt(t.at, 10)
		}
		// Whose screen the pane shows: Claude Code's unless the agent says.
		if drv, _, err := l.r.Driver(l.th.Agent); err == nil {
			if pa, ok := drv.(driver.PaneAdopter); ok {
				if tui := pa.PaneTUI(*spec); tui != "" {
					opts[tmux.OptTUI] = tui
				}
			}
		}
	case termWatch:
		opts[watch.OptPID] = strconv.Itoa(t.pid)
		if t.at > 0 {
			opts[watch.OptFrom] = strconv.FormatInt(t.at, 10)
		}
	}
	spec.Options = opts
}

// takeTerminal makes the thread follow t, and starts following it now: the
// pane's screen and the transcript reach the thread before anyone writes.
func (l *lane) takeTerminal(t *terminal) error {
	if l.life != noSession {
		if l.term != nil && l.term.same(*t) {
			return nil // taken already
		}
		return fmt.Errorf("%w: the thread's agent runs; stop it first", chat.ErrBadInput)
	}
	l.term = t
	l.batch.Attach = t.attachment(l.th.ID) // followed again after a restart
	l.log.Info("taking a terminal's session", "kind", t.kind, "pid", t.pid, "pane", t.pane)
	return nil
}

// readTo keeps where the followed transcript was read to, with the events
// read before it (their commit, or the next): a restart shows what follows.
func (l *lane) readTo(at int64) {
	if l.term != nil && at != l.term.at {
		l.term.at = at
		l.batch.Attach = l.term.attachment(l.th.ID)
	}
}

// dropTerminal lets go of the person's process: the thread continues the
// session itself from now on.
func (l *lane) dropTerminal() {
	if l.term != nil {
		l.log.Info("the terminal's session is the thread's own again", "kind", l.term.kind)
		l.term = nil
		l.batch.Attach = &store.Attachment{Thread: l.th.ID}
	}
}
