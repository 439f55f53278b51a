package procgroup

import (
	"context"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/testkit"
)

// An agent parley started for a thread carries the thread's mark, a
// person's process does not; End ends the marked one and its group.
func TestEndEndsTheProcessParleyMarked(t *testing.T) {
	t.Parallel()
	cmd := Command(context.Background(), syscall.SIGKILL, time.Second, "sleep", "60")
	cmd.Env = append(os.Environ(), MarkEnv+"=t_mine")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	other := exec.Command("sleep", "60")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })

	pid := cmd.Process.Pid
	if !Marked(pid, "t_mine") {
		t.Fatal("parley's agent is not seen as marked for its thread")
	}
	if Marked(pid, "t_other") || Marked(other.Process.Pid, "t_mine") {
		t.Fatal("a mark was seen where there is none")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := End(ctx, pid, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if !gone(pid) {
		t.Fatal("End returned and the process still runs")
	}
	<-waited
	if gone(other.Process.Pid) {
		t.Fatal("End ended a process it was not given")
	}
}

// An exited child nobody reaped yet (a zombie) is gone: an init that does
// not reap (a container's) leaves a killed parley's agents so.
func TestAZombieIsGone(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Wait() }()
	testkit.Eventually(t, 30*time.Second, func() bool { return gone(cmd.Process.Pid) }, "an exited child is still seen as running")
	if err := syscall.Kill(cmd.Process.Pid, 0); err != nil {
		t.Fatalf("the zombie should still answer kill 0 (what made it look alive): %v", err)
	}
}
