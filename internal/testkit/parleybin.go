package testkit

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	mu   sync.Mutex
	all  map[string]*build
	dir  string // they all go here, removed by RunAndRemoveBinary
	hook *build // parley-hook, beside them
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
	HookBinary(t) // what a `parley serve` of it runs for Claude Code's hooks, as installed
	return b.bin
}

// HookBinary builds ./cmd/parley-hook once per test process beside the
// parley builds (so a `parley serve` of ParleyBinary finds it, as an
// installed one does) and returns its path.
func HookBinary(t testing.TB) string {
	t.Helper()
	builds.mu.Lock()
	if builds.hook == nil {
		builds.hook = &build{}
	}
	b := builds.hook
	builds.mu.Unlock()
	b.once.Do(func() {
		var dir string
		if dir, b.err = binDir(); b.err == nil {
			b.bin = filepath.Join(dir, "parley-hook")
			b.err = goBuild(t, b.bin, "./cmd/parley-hook")
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.bin
}

// binDir is the folder every build goes to, made on first use.
func binDir() (string, error) {
	builds.mu.Lock()
	defer builds.mu.Unlock()
	if builds.dir == "" {
		dir, err := os.MkdirTemp("", "parley-test-bin-")
		if err != nil {
			return "", err
		}
		builds.dir = dir
	}
	return builds.dir, nil
}

func buildParley(t testing.TB, ldflags string, n int) (string, error) {
	dir, err := binDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, fmt.Sprintf("parley-%d", n))
	var flags []string
	if testing.Short() {
		// The fast tier builds parley without tsnet (cmd/parley/notailnet.go):
		// none of its tests joins a tailnet, and compiling tsnet's ~270 packages
		// would be much of its cold build. make test builds the real binary.
		flags = append(flags, "-tags", "notailnet")
	}
	if ldflags != "" {
		flags = append(flags, "-ldflags", ldflags)
	}
	return bin, goBuild(t, bin, "./cmd/parley", flags...)
}

// goBuild builds pkg of this repository into bin. Bounded, and killed with
// its children (the compiler and linker) if it overruns, so a wedged build
// fails the test instead of hanging it.
func goBuild(t testing.TB, bin, pkg string, flags ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	args := append(append([]string{"build", "-o", bin}, flags...), pkg)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = RepoRoot(t)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s %s: %w\n%s", strings.Join(flags, " "), pkg, err, out)
	}
	return nil
}

// RunAndRemoveBinary runs the package's tests, removes the binary ParleyBinary
// built (if any) and exits with the tests' code. Call it from TestMain.
func RunAndRemoveBinary(m *testing.M) {
	code := m.Run()
	RemoveBinaries()
	os.Exit(code)
}

// RemoveBinaries removes what ParleyBinary and HookBinary built, for a
// TestMain that does more after m.Run than RunAndRemoveBinary does.
func RemoveBinaries() {
	if builds.dir != "" {
		os.RemoveAll(builds.dir)
	}
}
