package driver

import (
	"context"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/chat"
)

// What a driver may know of its agent's own sessions, for a session started
// outside parley (a terminal) and continued in parley, and handed back.

// HistoryReader is a Driver that can read the turns of one of its agent's
// own sessions (spec.ResumeID, run in spec.Cwd) from the agent's record:
// resuming does not replay the past (Claude Code's stream-json says nothing
// of it), so parley shows it from there.
type HistoryReader interface {
	History(ctx context.Context, spec Spec) ([]Turn, error)
}

// Turn roles.
const (
	TurnUser  = "user"  // what the person wrote
	TurnAgent = "agent" // the agent's answer text
	TurnTool  = "tool"  // a tool the agent ran, and what came of it
)

// Turn is one message of a session's record (or, for TurnTool, one tool
// call in it), in the conversation's order.
type Turn struct {
	ID   string    // the record's own id (Claude Code's uuid)
	Role string    // TurnUser, TurnAgent or TurnTool
	Text string    // the words (TurnUser, TurnAgent)
	At   time.Time // when the agent recorded it
	// Tool is a TurnTool's call (its Status the call's end: completed, or
	// failed when it failed or the record holds no result), and Result what
	// it gave, when the record holds it.
	Tool   *chat.ToolCall
	Result *chat.ToolCallUpdate
}

// RunChecker is a Driver that can tell whether a process runs one of its
// agent's sessions now (Claude Code's ~/.claude/sessions/<pid>.json): none of
// the agents locks a session, and two processes on one fork it.
type RunChecker interface {
	// RunningNow answers the process that runs spec.ResumeID now, or 0.
	RunningNow(ctx context.Context, spec Spec) (pid int, err error)
}

// TerminalTaker is a RunChecker whose agent's running sessions parley can
// take from a person's terminal (Claude Code's: its tmux pane adopted, its
// transcript watched). A running session of any other RunChecker's agent is
// refused.
type TerminalTaker interface {
	RunChecker
	TakesTerminals()
}

// PaneAdopter is a RunChecker whose agent's TUI, running in a person's tmux
// pane, the tmux driver can read and type into (Gemini CLI's): that pane is
// adopted; a plain terminal running it is neither adopted nor watched.
type PaneAdopter interface {
	RunChecker
	// PaneTUI names the TUI of spec's agent for the tmux driver (its
	// OptTUI), "" when the tmux driver reads none of this agent's.
	PaneTUI(spec Spec) string
}

// HandBacker is a Driver that can say how a person goes on with one of its
// sessions (spec.ResumeID in spec.Cwd) in a terminal.
type HandBacker interface {
	// ResumeCommand is a shell command line ("cd DIR && claude --resume ID"),
	// or "" when the agent has no such command.
	ResumeCommand(spec Spec) string
}

// ShellLine joins words into one line a POSIX shell reads back as those
// words: a word with anything but letters, digits and -_./:=@+, is single-quoted.
func ShellLine(words ...string) string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = shellWord(w)
	}
	return strings.Join(out, " ")
}

func shellWord(w string) string {
	if w == "" {
		return "''"
	}
	for _, c := range w {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_./:=@+,", c)) {
			return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
	}
	return w
}
