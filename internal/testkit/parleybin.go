package testkit

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

var built struct {
	once sync.Once
	bin  string
	err  error
}

// ParleyBinary builds ./cmd/parley once per test process and returns its path,
// for tests that run `parley` as a real process. A package that calls it ends
// its TestMain with RunAndRemoveBinary so the build does not outlive the run.
func ParleyBinary(t testing.TB) string {
	t.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "parley-test-bin-")
		if err != nil {
			built.err = err
			return
		}
		bin := filepath.Join(dir, "parley")
		// Bounded, and killed with its children (the compiler and linker) if
		// it overruns, so a wedged build fails the test instead of hanging it.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/parley")
		cmd.Dir = RepoRoot(t)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		cmd.WaitDelay = 10 * time.Second
		if out, err := cmd.CombinedOutput(); err != nil {
			os.RemoveAll(dir)
			built.err = fmt.Errorf("go build ./cmd/parley: %w\n%s", err, out)
			return
		}
		built.bin = bin
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

// RunAndRemoveBinary runs the package's tests, removes the binary ParleyBinary
// built (if any) and exits with the tests' code. Call it from TestMain.
func RunAndRemoveBinary(m *testing.M) {
	code := m.Run()
	if built.bin != "" {
		os.RemoveAll(filepath.Dir(built.bin))
	}
	os.Exit(code)
}
