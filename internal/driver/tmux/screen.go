// Reading the pane: captures, the pane's facts, and waiting on the screen.

package tmux

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/tmux/ctl"
	"github.com/parleyhq/parley/internal/driver/tmux/pane"
)

// capture reads the whole history: counting earlier prompts must not lose one
// off the top of a window while the new one comes in at the bottom (that would
// read a real send as not sent, and retyping would send it twice). Sessions
// parley starts keep 50,000 lines.
func (s *session) capture(ctx context.Context) (*pane.Screen, error) {
	out, err := s.query(ctx, ctl.CaptureArgs(s.pane, ctl.HistoryAll)...)
	if err != nil {
		return nil, s.goneErr(err)
	}
	return pane.ReadAs(s.dialect, out), nil
}

func (s *session) captureVisible(ctx context.Context) (*pane.Screen, error) {
	out, err := s.query(ctx, ctl.CaptureArgs(s.pane, 0)...)
	if err != nil {
		return nil, s.goneErr(err)
	}
	return pane.ReadAs(s.dialect, out), nil
}

func (s *session) paneInfo(ctx context.Context) (ctl.PaneInfo, error) {
	out, err := s.query(ctx, ctl.PaneArgs(s.pane)...)
	if err != nil {
		return ctl.PaneInfo{}, s.goneErr(err)
	}
	return ctl.ParsePane(out)
}

// query runs a tmux command of fixed words (reads, key names: never a
// person's text) through the control client (no process to start: the send's
// re-checks and keys stay cheap), or as a process without one.
func (s *session) query(ctx context.Context, args ...string) (string, error) {
	defer begin(ctx)(args[0])
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
		mark := begin(ctx)
		select {
		case <-changed:
			mark("wait: woken by pane output")
		case <-hooked:
			mark("wait: woken by a hook")
		case <-timer.C:
			mark("wait: step timeout")
			return scr, false, nil
		case <-ctx.Done():
			return scr, false, ctx.Err()
		case <-s.ctl.Done():
			return scr, false, fmt.Errorf("%w: %w", ErrGone, driver.ErrNotRunning)
		}
	}
}
