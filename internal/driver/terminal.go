package driver

import (
	"context"

	"github.com/parleyhq/parley/internal/chat"
)

// TerminalViewer is a Driver whose sessions run in a terminal a person can
// watch (tmux): the dashboard's terminal view reads its screen and, when the
// person switches typing on, types into it. Neither goes through the lane:
// keys typed there have no receipt.
type TerminalViewer interface {
	// Terminal finds the terminal of thread's session as the agent's options
	// place it; an error wrapping ErrNotRunning when there is none now.
	Terminal(ctx context.Context, thread chat.ThreadID, options map[string]string) (Terminal, error)
}

// Terminal is one session's terminal.
type Terminal interface {
	// Screen is what the terminal shows now.
	Screen(ctx context.Context) (Screen, error)
	// Type sends text as typed keys, literally (no key names).
	Type(ctx context.Context, text string) error
}

// Screen is a terminal's visible screen: its rows with their colours as ANSI
// escapes (SGR only), its size and where its cursor is (0-based).
type Screen struct {
	Text    string `json:"text"` // the rows, each ended by "\n"
	Cols    int    `json:"cols"`
	Rows    int    `json:"rows"`
	CursorX int    `json:"cursor_x"`
	CursorY int    `json:"cursor_y"`
}
