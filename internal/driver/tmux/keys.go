// Typing on the send's path without a tmux process per key: the key names and
// the paste of a loaded buffer are fixed words, so they go through the control
// client as reads do. A person's text never does: it is loaded into a buffer
// by a tmux process reading it on stdin (an argument list, no command syntax).

package tmux

import (
	"context"
	"strings"
)

// sendBuffer is the tmux buffer a send's text is loaded into.
const sendBuffer = "parley-send"

// press sends key names (C-m, never text) to the pane.
func (s *session) press(ctx context.Context, keys ...string) error {
	_, err := s.query(ctx, append([]string{"send-keys", "-t", s.pane}, keys...)...)
	return err
}

// paste puts text at the pane's cursor as a bracketed paste, deleting the
// buffer after.
func (s *session) paste(ctx context.Context, text string) error {
	if _, err := s.c.RunInput(ctx, strings.NewReader(text), "load-buffer", "-b", sendBuffer, "-"); err != nil {
		return err
	}
	_, err := s.query(ctx, "paste-buffer", "-p", "-d", "-b", sendBuffer, "-t", s.pane)
	return err
}
