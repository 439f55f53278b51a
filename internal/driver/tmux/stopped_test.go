package tmux

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/driver/tmux/ctl"
	"github.com/parleyhq/parley/internal/testkit"
)

// stoppedUnder says stopped only for the process reading the pane's
// terminal: a stopped background job under it (another process group) reads
// nothing from the terminal and must not hold every message up.
func TestStoppedUnderOnlyTheForeground(t *testing.T) {
	testkit.NeedsTmux(t)
	c, err := ctl.New("", randomName(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killServer(t, c) })
	ctx := context.Background()
	// A shell in the foreground running a program (its group, the
	// terminal's), and a job of its own group (setsid) in the background.
	if err := c.NewSession(ctx, ctl.NewSessionOptions{Name: "s", Cwd: t.TempDir(),
		Argv: []string{"sh", "-c", "setsid sleep 300 & sleep 301; true"}}); err != nil {
		t.Fatal(err)
	}
	info, err := c.Pane(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	var bg, fg int
	testkit.Eventually(t, 10*time.Second, func() bool {
		kids, _ := os.ReadFile("/proc/" + strconv.Itoa(info.PID) + "/task/" + strconv.Itoa(info.PID) + "/children")
		bg, fg = 0, 0
		for _, f := range strings.Fields(string(kids)) {
			pid, _ := strconv.Atoi(f)
			st, ok := procStat(pid)
			switch {
			case ok && st.pgrp == pid:
				bg = pid // setsid has run: a group of its own
			case ok && st.pgrp == info.PID:
				fg = pid
			}
		}
		return bg > 0 && fg > 0
	}, "the two programs never started")
	if stoppedUnder(ctx, info.PID) {
		t.Fatal("nothing is stopped, and stoppedUnder says stopped")
	}
	stop := func(pid int) {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
		testkit.Eventually(t, 10*time.Second, func() bool { st, _ := procStat(pid); return st.state == 'T' }, "%d never stopped", pid)
	}
	stop(bg)
	if stoppedUnder(ctx, info.PID) {
		t.Error("a stopped background job counted as the agent stopped")
	}
	stop(fg)
	if !stoppedUnder(ctx, info.PID) {
		t.Error("the stopped foreground program did not count as stopped")
	}
}

// A process stopped under a tracer (state t: a debugger holds it) reads the
// terminal no more than one stopped by a signal (T).
func TestStatStopped(t *testing.T) {
	for _, c := range []struct {
		line string
		want bool
	}{
		{"42 (claude) S 1 42 42 34816 42 4194560", false},
		{"42 (claude) R 1 42 42 34816 42 4194560", false},
		{"42 (claude) T 1 42 42 34816 42 4194560", true},
		{"42 (claude) t 1 42 42 34816 42 4194560", true},
		{"42 (a (b) c) t 1 42 42 34816 42 4194560", true},
	} {
		st, ok := parseStat([]byte(c.line))
		if !ok {
			t.Fatalf("%q: not parsed", c.line)
		}
		if st.stopped() != c.want {
			t.Errorf("%q: stopped %v, want %v", c.line, st.stopped(), c.want)
		}
	}
}
