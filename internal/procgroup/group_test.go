package procgroup

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// An agent killed from outside leaves its children in its group (as Claude's
// ACP adapter leaves its CLI): EndGroup ends them, one that ignores SIGTERM
// with SIGKILL after the grace, and returns only once none of the group runs.
func TestEndGroupEndsWhatTheLeaderLeft(t *testing.T) {
	t.Parallel()
	pids := filepath.Join(t.TempDir(), "pids")
	// Two children: one ends on SIGTERM, one ignores it; each writes its pid.
	script := `sleep 60 & echo $! >> "$1"
sh -c 'trap "" TERM; echo $$ >> "$1"; while :; do sleep 0.05; done' sh "$1" &
wait`
	cmd := Command(context.Background(), syscall.SIGKILL, time.Second, "sh", "-c", script, "sh", pids)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	var children []int
	deadline := time.Now().Add(10 * time.Second)
	for len(children) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the children did not start: %v", children)
		}
		b, _ := os.ReadFile(pids)
		children = nil
		for _, f := range strings.Fields(string(b)) {
			if p, err := strconv.Atoi(f); err == nil {
				children = append(children, p)
			}
		}
		time.Sleep(10 * time.Millisecond) // pacing the read of the file, not a synchronisation
	}
	if err := cmd.Process.Kill(); err != nil { // the leader alone, as kill -9 of the agent does
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if !groupRuns(pgid) {
		t.Fatal("the children are gone with the leader: nothing left to test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := EndGroup(ctx, pgid, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for _, p := range children {
		if !gone(p) {
			t.Errorf("child %d still runs after EndGroup", p)
		}
	}
	if groupRuns(pgid) {
		t.Error("the group still runs after EndGroup")
	}
	// Nothing left: at once, and never parley's own group.
	if err := EndGroup(ctx, pgid, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := EndGroup(ctx, 0, time.Second); err != nil {
		t.Fatal(err)
	}
}
