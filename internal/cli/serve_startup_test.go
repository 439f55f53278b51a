package cli_test

import (
	"bufio"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/parleyhq/parley/internal/testkit"
)

// A first start with no agent: above the sign-in link nothing but the line
// that introduces it (the store's migrations are debug lines), and the "no
// agent found" warning said once in all that serve writes.
func TestServeStartsQuietlyAndWarnsOnce(t *testing.T) {
	t.Parallel()
	bin := testkit.ParleyBinary(t)
	cmd := exec.Command(bin, "serve", "--data", filepath.Join(t.TempDir(), "data"), "--addr", "127.0.0.1:0")
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=", "XDG_CONFIG_HOME=" + t.TempDir()}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	var printed []string
	for sc.Scan() {
		printed = append(printed, sc.Text())
		if strings.HasPrefix(sc.Text(), "warning: no agent found") {
			break
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	for sc.Scan() {
		printed = append(printed, sc.Text())
	}
	cmd.Wait()
	all := strings.Join(printed, "\n") + "\n" + stderr.String()
	if strings.Contains(all, "migration") {
		t.Errorf("migration lines at the default log level:\n%s", all)
	}
	if n := strings.Count(all, "no agent found"); n != 1 {
		t.Errorf("\"no agent found\" said %d times, want once:\n%s", n, all)
	}
}

// A second `parley serve` on a port already taken says who holds it (another
// parley, with its address; or some other program) and names --addr.
func TestServeOnATakenPortSaysWhoHoldsIt(t *testing.T) {
	t.Parallel()
	bin := testkit.ParleyBinary(t)
	second := func(addr string) string {
		cmd := exec.Command(bin, "serve", "--data", filepath.Join(t.TempDir(), "data"), "--addr", addr)
		cmd.Dir = t.TempDir()
		cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=", "XDG_CONFIG_HOME=" + t.TempDir()}
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatalf("a second parley serve on %s ran:\n%s", addr, out)
		}
		return string(out)
	}
	first, _ := startServeIn(t, t.TempDir(), t.TempDir())
	if out := second(first); !strings.Contains(out, "another parley is already serving there (http://"+first+"/)") || !strings.Contains(out, "--addr") {
		t.Errorf("on a parley's port: %s, want it named as another parley's, and --addr", out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // a program that takes connections and says nothing
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if out := second(ln.Addr().String()); !strings.Contains(out, "taken by another program (not a parley)") || !strings.Contains(out, "--addr") {
		t.Errorf("on another program's port: %s, want it said, and --addr", out)
	}
}
