// A terminal's session followed again after parley restarts: the thread
// that adopted a pane or watched a plain terminal follows that process again
// when it still runs the session, or says it is gone and continues the
// session itself from the next message.

package router

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/claudecode"
	"github.com/parleyhq/parley/internal/driver/watch"
	"github.com/parleyhq/parley/internal/sessions"
	"github.com/parleyhq/parley/internal/store"
)

// reattachTimeout bounds one thread's look at its process (its agent's
// record of running sessions, one tmux server's panes).
const reattachTimeout = 10 * time.Second

// reattach makes the lane, before it runs, follow again the process the
// store says its thread followed when parley stopped, or say it is gone.
func (l *lane) reattach(ctx context.Context, a store.Attachment) error {
	t := &terminal{kind: a.Kind, pid: a.PID, start: a.ProcStart, server: a.Server, pane: a.Pane, at: a.TranscriptAt}
	ctx, cancel := context.WithTimeout(ctx, reattachTimeout)
	defer cancel()
	if why := l.r.goneSince(ctx, l.th, t); why != "" {
		l.log.Info("the terminal's session followed before the restart is gone", "kind", t.kind, "pid", t.pid, "why", why)
		l.showGap(t) // what it wrote before it went, before the words that it went
		l.batch.Attach = &store.Attachment{Thread: l.th.ID}
		l.emit(chat.SessionInfo{State: "exited", SessionID: l.th.SessionID,
			Detail: "while parley was stopped, " + why + ": the next message continues the session here"})
		return l.flush()
	}
	l.term = t
	// What the session wrote meanwhile comes first (t.at moves to its end),
	// then what it writes live: the driver follows from t.at.
	l.showGap(t)
	l.log.Info("following the terminal's session again after a restart", "kind", t.kind, "pid", t.pid, "pane", t.pane)
	// Followed from now on, as when it was taken: the pane's cards and the
	// transcript's words reach the thread before anyone writes.
	l.startSession()
	return l.flush()
}

// showGap shows what the session's transcript holds after the place the
// thread stopped reading it: the prompts typed and the answers given in the
// terminal while parley was stopped. (Read here, not by the driver, for an
// adopted Claude Code pane's follower shows no prompts: live, they are
// parley's own. An adopted Gemini CLI pane's follower shows them, telling
// parley's sends apart: the tmux driver follows its chat from t.at and shows
// the gap itself.)
func (l *lane) showGap(t *terminal) {
	if t.at <= 0 {
		return
	}
	drv, ag, err := l.r.Driver(l.th.Agent)
	if err != nil {
		return // goneSince says so
	}
	if _, claude := drv.(driver.TerminalTaker); !claude {
		return
	}
	spec := agentSpec(ag)
	spec.Cwd, spec.ResumeID = l.th.Cwd, l.th.SessionID
	spec.Options = map[string]string{watch.OptPID: strconv.Itoa(t.pid), watch.OptFrom: strconv.FormatInt(t.at, 10)}
	gap, err := watch.Gap(spec)
	if err != nil {
		l.log.Warn("what the terminal's session wrote while parley was stopped could not be read", "err", err)
		return
	}
	for _, p := range gap {
		l.onEvent(p)
	}
}

// goneSince says why the terminal a thread followed no longer holds its
// session ("" when it does): its process ended (or its pid is another's
// now), another process runs the session, or an adopted agent left its pane.
func (r *Router) goneSince(ctx context.Context, th chat.Thread, t *terminal) string {
	drv, ag, err := r.Driver(th.Agent)
	if err != nil {
		return err.Error()
	}
	spec := agentSpec(ag)
	spec.Cwd, spec.ResumeID = th.Cwd, th.SessionID
	var rc driver.RunChecker
	if tt, ok := drv.(driver.TerminalTaker); ok {
		rc = tt
	} else if pa, ok := drv.(driver.PaneAdopter); ok && t.kind == termAdopt && pa.PaneTUI(spec) != "" {
		rc = pa // an adopted pane of an agent whose TUI the tmux driver reads
	}
	if rc == nil || th.SessionID == "" {
		return fmt.Sprintf("agent %q no longer says which process runs its session", th.Agent)
	}
	pid, err := rc.RunningNow(ctx, spec)
	switch {
	case err != nil:
		return "its process could not be found (" + err.Error() + ")"
	case pid != t.pid || !claudecode.Alive(t.pid, t.start):
		return fmt.Sprintf("the terminal's %s (pid %d) ended", th.Agent, t.pid)
	}
	if t.kind == termAdopt {
		p, ok := sessions.Locate(ctx, pid)
		if !ok || p.ID != t.pane || p.Server != t.server {
			return fmt.Sprintf("the terminal's %s (pid %d) is no longer in tmux pane %s", th.Agent, t.pid, t.pane)
		}
	}
	return ""
}
