package procgroup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

// MarkEnv is the variable parley puts in the environment of every agent it
// starts, naming the thread the agent runs for. A process that carries it is
// parley's own, even one a previous run of parley left behind when it was
// killed (an agent in a process group of its own outlives a kill -9 of the
// daemon): nobody can talk to that one any more, and its session is the
// thread's, so parley may end it rather than refuse the session as "running
// in a terminal".
const MarkEnv = "PARLEY_THREAD"

// Marked reports whether process pid was started by parley for thread:
// its environment holds MarkEnv=thread. A process that cannot be read
// (gone, another user's) is not.
func Marked(pid int, thread string) bool {
	if pid <= 0 || thread == "" {
		return false
	}
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	want := []byte(MarkEnv + "=" + thread)
	for kv := range bytes.SplitSeq(env, []byte{0}) {
		if bytes.Equal(kv, want) {
			return true
		}
	}
	return false
}

// End ends process pid and the process group it leads (its shells and MCP
// servers): SIGTERM, then SIGKILL after grace, and waits until it is gone (a
// zombie waiting for a reaper counts as gone).
func End(ctx context.Context, pid int, grace time.Duration) error {
	target := pid
	if pg, err := syscall.Getpgid(pid); err == nil && pg == pid {
		target = -pid // the group, whose id is its leader's pid
	}
	return terminate(ctx, target, grace, func() bool { return !gone(pid) })
}

// terminate sends target (kill(2)'s pid: negative for a group) SIGTERM,
// then SIGKILL once grace has passed, until runs says it no longer runs or
// ctx ends.
func terminate(ctx context.Context, target int, grace time.Duration, runs func() bool) error {
	signal := func(sig syscall.Signal) error {
		if err := syscall.Kill(target, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("procgroup: signal %d: %w", target, err)
		}
		return nil
	}
	if err := signal(syscall.SIGTERM); err != nil {
		return err
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	killAt := time.Now().Add(grace)
	killed := false
	for runs() {
		if !killed && time.Now().After(killAt) {
			if err := signal(syscall.SIGKILL); err != nil {
				return err
			}
			killed = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

// gone reports whether pid no longer runs: no such process, or a zombie.
func gone(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// The state follows the command's closing parenthesis: "pid (comm) S …".
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' || stat[i+2] == 'X'
}
