package tmux

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/tmux/ctl"
)

var _ driver.TerminalViewer = (*Driver)(nil)

// Terminal implements driver.TerminalViewer: the active pane of the thread's
// session (the adopted one, the configured name, or the one named after the
// thread, as Start chooses), targeted by its pane id from then on so a
// session renamed or a pane split never redirects it.
func (d *Driver) Terminal(ctx context.Context, thread chat.ThreadID, options map[string]string) (driver.Terminal, error) {
	c, err := d.client(d.Logger, options[OptSocket])
	if err != nil {
		return nil, err
	}
	name := options[OptSession]
	switch {
	case options[OptAdopt] != "":
		name = options[OptAdopt]
	case name == "":
		name = SessionName(thread)
	}
	id, err := c.PaneID(ctx, name)
	if errors.Is(err, ctl.ErrNoSession) {
		return nil, fmt.Errorf("no tmux session %s runs for this thread now: %w", name, driver.ErrNotRunning)
	}
	if err != nil {
		return nil, err
	}
	return &terminal{c: c, pane: id}, nil
}

type terminal struct {
	c    *ctl.Client
	pane string // %N
}

// screenFormat is what display-message says before the capture: the size and the cursor.
const screenFormat = "#{pane_width} #{pane_height} #{cursor_x} #{cursor_y}"

// Screen reads the size, the cursor and the visible rows (with their colours)
// in one tmux command sequence, so they describe the same moment.
func (t *terminal) Screen(ctx context.Context) (driver.Screen, error) {
	out, err := t.c.Run(ctx, "display-message", "-p", "-t", t.pane, screenFormat, ";",
		"capture-pane", "-p", "-e", "-t", t.pane)
	if err != nil {
		return driver.Screen{}, gone(err)
	}
	head, text, ok := strings.Cut(out, "\n")
	f := strings.Fields(head)
	if !ok || len(f) != 4 {
		// display-message prints nothing for a pane that is gone (ParsePane).
		return driver.Screen{}, fmt.Errorf("tmux pane %s is gone: %w", t.pane, driver.ErrNotRunning)
	}
	var n [4]int
	for i, s := range f {
		if n[i], err = strconv.Atoi(s); err != nil {
			return driver.Screen{}, fmt.Errorf("tmux: display-message: unexpected output %q", head)
		}
	}
	return driver.Screen{Text: text, Cols: n[0], Rows: n[1], CursorX: n[2], CursorY: n[3]}, nil
}

// Type sends text with send-keys -l: each character as typed, no key names.
func (t *terminal) Type(ctx context.Context, text string) error {
	return gone(t.c.SendLiteral(ctx, t.pane, text))
}

// gone says a pane that is no more is an agent not running. A pane id whose
// server has just lost its last session is answered "no current target"
// (tmux 3.3a), not "can't find pane".
func gone(err error) error {
	if errors.Is(err, ctl.ErrNoSession) || err != nil && strings.Contains(err.Error(), "no current target") {
		return fmt.Errorf("%w: %w", driver.ErrNotRunning, err)
	}
	return err
}
