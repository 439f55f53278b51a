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

type build struct {
	once sync.Once
	n    int // its file: parley-<n>
	bin  string
	err  error
}

// builds holds each build by its -ldflags ("" the plain one).
var builds struct {
	mu  sync.Mutex
	all map[string]*build
	dir string // they all go here, removed by RunAndRemoveBinary
}

// ParleyBinary builds ./cmd/parley once per test process and returns its path,
// for tests that run `parley` as a real process (under -short without tsnet:
// -tags notailnet). A package that calls it ends its TestMain with
// RunAndRemoveBinary so the build does not outlive the run.
func ParleyBinary(t testing.TB) string { return ParleyBinaryWith(t, "") }

// ParleyBinaryWith is ParleyBinary built with these -ldflags (say "-X
// main.version=v0.9.0"): another build of the same code, for tests of two
// builds together. Each is built once per test process.
func ParleyBinaryWith(t testing.TB, ldflags string) string {
	t.Helper()
	builds.mu.Lock()
	if builds.all == nil {
		builds.all = map[string]*build{}
	}
	b := builds.all[ldflags]
	if b == nil {
		b = &build{n: len(builds.all)}
		builds.all[ldflags] = b
	}
	builds.mu.Unlock()
	b.once.Do(func() { b.bin, b.err = buildParley(t, ldflags, b.n) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.bin
}

func buildParley(t testing.TB, ldflags string, n int) (string, error) {
	builds.mu.Lock()
	if builds.dir == "" {
		dir, err := os.MkdirTemp("", "parley-test-bin-")
		if err != nil {
			builds.mu.Unlock()
			return "", err
		}
		builds.dir = dir
	}
	bin := filepath.Join(builds.dir, fmt.Sprintf("parley-%d", n))
	builds.mu.Unlock()
	// Bounded, and killed with its children (the compiler and linker) if
	// it overruns, so a wedged build fails the test instead of hanging it.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	args := []string{"build", "-o", bin}
	if testing.Short() {
		// The fast tier builds parley without tsnet (cmd/parley/notailnet.go):
		// none of its tests joins a tailnet, and compiling tsnet's ~270 packages
		// would be much of its cold build. make test builds the real binary.
		args = append(args, "-tags", "notailnet")
	}
	if ldflags != "" {
		args = append(args, "-ldflags", ldflags)
	}
	cmd := exec.CommandContext(ctx, "go", append(args, "./cmd/parley")...)
	cmd.Dir = RepoRoot(t)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s ./cmd/parley: %w\n%s", ldflags, err, out)
	}
	return bin, nil
}

// RunAndRemoveBinary runs the package's tests, removes the binary ParleyBinary
// built (if any) and exits with the tests' code. Call it from TestMain.
func RunAndRemoveBinary(m *testing.M) {
	code := m.Run()
	if builds.dir != "" {
		os.RemoveAll(builds.dir)
	}
	os.Exit(code)
}
