package tmux

import (
	"context"
	"errors"
	"fmt"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver/tmux/ctl"
)

// ErrDeadPane is a send into a pane whose program has exited while tmux kept
// the pane (remain-on-exit): nothing can read what is typed there.
var ErrDeadPane = errors.New("the agent has exited and its pane is dead: nothing was typed")

// revive is what a send does when the pane shows no agent: its program
// exited and the pane is dead, or a shell is left where it ran. A session
// parley started gets its agent back, resuming its conversation, and the
// thread is told so; the person's own session is theirs to restart, and the
// error says how.
func (s *session) revive(ctx context.Context, info ctl.PaneInfo) error {
	was := "its pane was dead"
	if !info.Dead {
		was = "its pane was left at a shell (" + info.CurrentCommand + ")"
	}
	if !s.owned {
		if info.Dead {
			return fmt.Errorf("%w; start it again there (tmux respawn-pane -t %s)", ErrDeadPane, s.name)
		}
		return fmt.Errorf("%w (%s): the agent is not running; start it in the pane again", ErrBareShell, info.CurrentCommand)
	}
	s.mu.Lock()
	id := s.sessionID
	s.turn, s.stopSeen, s.endSeen = false, false, false // the old process's turn died with it
	s.mu.Unlock()
	if id == "" {
		id = s.spec.ResumeID
	}
	argv, err := s.agentArgv(s.spec, id, s.useHooks)
	if err != nil {
		return err
	}
	full, err := ctl.StartArgv(s.spec.Cwd, argv)
	if err != nil {
		return err
	}
	args := []string{"respawn-pane", "-k", "-t", s.pane}
	for _, e := range s.spec.Env {
		args = append(args, "-e", e)
	}
	args = append(append(args, "--"), full...)
	s.log.Warn("the agent is not running; starting it again", "was", was, "resume", id)
	s.kbd.Lock()
	_, err = s.c.Run(ctx, args...)
	s.kbd.Unlock()
	if err != nil {
		return s.goneErr(err)
	}
	if err := s.waitReady(ctx, orDuration(s.d.ReadyTimeout, readyTimeout), false); err != nil {
		return fmt.Errorf("tmux: the agent had exited (%s) and was started again, but: %w", was, err)
	}
	detail := "the agent had exited (" + was + "); parley started it again"
	if id != "" {
		detail += ", resuming its conversation"
	} else {
		detail += " in a new conversation (its session id was never reported)"
	}
	s.sink.Event(chat.SessionInfo{State: "restarted", SessionID: id, Detail: detail})
	return nil
}
