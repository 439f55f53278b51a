package store

import "github.com/parleyhq/parley/internal/chat"

// Attachment is the person's process a thread follows instead of starting
// its own: an adopted tmux pane or a watched plain terminal. It is kept so a
// restarted parley can follow that process again, when it still runs.
type Attachment struct {
	Thread chat.ThreadID
	Kind   string // "adopt" or "watch"; "" in a Batch: the thread follows none any more
	PID    int
	// ProcStart is when the process started (field 22 of /proc/<pid>/stat):
	// a later process given the same pid is another.
	ProcStart string
	Server    string // adopt: the tmux server's socket name
	Pane      string // adopt: the pane's id, %N
	// TranscriptAt is, for a Claude Code session, the byte of its transcript
	// after the last whole record the thread shows (0: not known): a
	// restarted parley shows what follows it.
	TranscriptAt int64
}
