// Package procgroup starts the programs parley runs (agents, tmux clients,
// plugins) each in a process group of its own, so that ending one ends what it
// started too: an agent's shells and MCP servers, a plugin's helpers. It is the
// one place that does; the callers choose the signal, and say why.
//
// Which signal, and why (each caller's constant names it too):
//
//   - SIGKILL for a program whose gentle end is another path, already tried,
//     or that holds nothing to save: Claude Code over stream-json (Close ends
//     it by closing stdin and waiting; it writes its transcript as it goes, so
//     a kill loses nothing resume needs), a tmux client command (one-shot; the
//     tmux server is not in its group), a plugin (parley's own child: closing
//     its stdin is its gentle end; its state is the daemon's).
//   - SIGTERM for an ACP agent (Gemini CLI, Qwen Code, Codex, Claude's ACP
//     adapter): Close gives it a grace after stdin closes, then the group gets
//     SIGTERM so a Node agent still busy can save its session files (a later
//     session/load needs them). After the wait delay exec kills the group's
//     leader with SIGKILL.
//
// exec's Cancel reaches the group only while Wait waits: what an agent that
// ended (by itself, or killed from outside) leaves in its group is ended by
// EndGroup, SIGTERM then SIGKILL, before the drivers report the exit.
package procgroup

import (
	"context"
	"os/exec"
	"syscall"
	"time"
)

// Command is exec.CommandContext with the program in a process group of its
// own: when ctx ends, sig goes to the whole group, and waitDelay later Wait
// stops waiting (exec.Cmd.WaitDelay: the leader is killed, its pipes closed).
func Command(ctx context.Context, sig syscall.Signal, waitDelay time.Duration, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, sig) // -pid: the group, whose id is the leader's pid
	}
	cmd.WaitDelay = waitDelay
	return cmd
}
