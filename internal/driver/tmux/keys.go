// Typing on the send's path without a tmux process: the key names and the
// paste of a loaded buffer are fixed words, so they go through the control
// client as reads do. A person's text never goes into tmux command syntax: it
// is written to a file of parley's own that the control client's load-buffer
// reads (the path is parley's, and plain), or, where the path is not plain,
// loaded by a tmux process reading it on stdin (an argument list).

package tmux

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
)

// sendBuffer begins the name of the tmux buffer a send's text is loaded
// into: a new name each paste, so a load that failed without saying so
// (load-buffer through the control client does not report a file it could
// not read) fails the paste ("no buffer") rather than pasting an older text
// a failed send left behind.
const sendBuffer = "parley-send"

var pasteSeq atomic.Uint64

// press sends key names (C-m, never text) to the pane.
func (s *session) press(ctx context.Context, keys ...string) error {
	_, err := s.query(ctx, append([]string{"send-keys", "-t", s.pane}, keys...)...)
	return err
}

// paste puts text at the pane's cursor as a bracketed paste, deleting the
// buffer after.
func (s *session) paste(ctx context.Context, text string) error {
	buffer := sendBuffer + "-" + strconv.FormatUint(pasteSeq.Add(1), 10)
	if err := s.load(ctx, buffer, text); err != nil {
		return err
	}
	_, err := s.query(ctx, "paste-buffer", "-p", "-d", "-b", buffer, "-t", s.pane)
	return err
}

// plainPath is a path tmux gives back unchanged: load-buffer expands formats
// ("#{…}", "#(…)") in its path, and these characters have no meaning there.
var plainPath = regexp.MustCompile(`^/[A-Za-z0-9_./-]+$`)

// load puts text in buffer. Through the control client, load-buffer
// reads it from a file in the session's own folder (0700; the file 0600,
// removed once loaded), which spares a tmux process per send; without a
// control client, or where that folder's path is not plain, a tmux process
// reads it on stdin.
func (s *session) load(ctx context.Context, buffer, text string) error {
	path := filepath.Join(s.dir, "paste")
	if s.ctl == nil || s.dir == "" || !plainPath.MatchString(path) {
		_, err := s.c.RunInput(ctx, strings.NewReader(text), "load-buffer", "-b", buffer, "-")
		return err
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		return fmt.Errorf("tmux: the paste's file: %w", err)
	}
	defer os.Remove(path)
	_, err := s.query(ctx, "load-buffer", "-b", buffer, path)
	return err
}
