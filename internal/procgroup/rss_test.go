package procgroup

import (
	"os"
	"syscall"
	"testing"
)

// RSS of this test's own group counts at least this process, which holds
// more than a megabyte; a group with no process is 0.
func TestRSS(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc here")
	}
	if got := RSS(syscall.Getpgrp()); got < 1<<20 {
		t.Errorf("RSS of this test's group: %d bytes, want at least this process's", got)
	}
	if got := RSS(1 << 30); got != 0 {
		t.Errorf("RSS of no group: %d, want 0", got)
	}
}
