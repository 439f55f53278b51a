// Package netns makes network namespaces for tests of several machines on one:
// a star where each leaf reaches the centre over its own veth pair and no leaf
// reaches another (the centre does not forward). It needs root and iproute2;
// without them the test is skipped, not failed. Nothing outside the namespaces
// it makes is touched: the host's own interfaces and routes stay as they were.
package netns

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Star is the centre and its leaves.
type Star struct {
	// Centre is the centre's namespace name.
	Centre string
	// Leaves maps a leaf's given name to its namespace and addresses.
	Leaves map[string]Leaf
}

// Leaf is one leaf: its namespace, its own address, and the centre's address
// on the leaf's link (the one the leaf dials).
type Leaf struct {
	NS, Addr, CentreAddr string
}

// NewStar makes the namespaces, removed when the test ends.
func NewStar(t *testing.T, leaves ...string) *Star {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("network namespaces need iproute2's ip")
	}
	// Names unique to this process, so tests running beside it never collide.
	prefix := fmt.Sprintf("pl%d", os.Getpid()%100000)
	s := &Star{Centre: prefix + "c", Leaves: map[string]Leaf{}}
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	ip("netns", "add", s.Centre)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", s.Centre).Run() })
	ip("-n", s.Centre, "link", "set", "lo", "up")
	for i, name := range leaves {
		ns := fmt.Sprintf("%sl%d", prefix, i)
		ip("netns", "add", ns)
		t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
		ip("-n", ns, "link", "set", "lo", "up")
		c, l := fmt.Sprintf("c%d", i), fmt.Sprintf("l%d", i)
		// The pair is made inside the centre's namespace and one end moved: the
		// host's namespace never holds either end.
		ip("-n", s.Centre, "link", "add", c, "type", "veth", "peer", "name", l, "netns", ns)
		centreAddr, leafAddr := fmt.Sprintf("10.231.%d.1", i), fmt.Sprintf("10.231.%d.2", i)
		ip("-n", s.Centre, "addr", "add", centreAddr+"/30", "dev", c)
		ip("-n", ns, "addr", "add", leafAddr+"/30", "dev", l)
		ip("-n", s.Centre, "link", "set", c, "up")
		ip("-n", ns, "link", "set", l, "up")
		s.Leaves[name] = Leaf{NS: ns, Addr: leafAddr, CentreAddr: centreAddr}
	}
	return s
}

// Command is name arg… run inside the namespace ns.
func Command(ns, name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", ns, name}, args...)...)
}

// Listen opens a TCP listener on addr inside the namespace ns, from this
// process: a thread of its own joins ns to make the socket, which stays in
// ns (only ns reaches it), and the thread is never used again. The
// listener is closed when the test ends.
func Listen(t *testing.T, ns, addr string) net.Listener {
	t.Helper()
	type result struct {
		ln  net.Listener
		err error
	}
	done := make(chan result, 1)
	go func() {
		// Locked and never unlocked: the goroutine ends with its thread in
		// ns, so Go ends the thread rather than give it to another.
		runtime.LockOSThread()
		f, err := os.Open(filepath.Join("/var/run/netns", ns))
		if err != nil {
			done <- result{err: err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- result{err: fmt.Errorf("setns %s: %w", ns, err)}
			return
		}
		ln, err := net.Listen("tcp", addr)
		done <- result{ln, err}
	}()
	r := <-done
	if r.err != nil {
		t.Fatalf("netns: listen on %s in %s: %v", addr, ns, r.err)
	}
	t.Cleanup(func() { r.ln.Close() })
	return r.ln
}
