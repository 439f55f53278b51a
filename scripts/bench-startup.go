//go:build ignore

// bench-startup measures parley builds side by side, turn about, for
// docs/benchmarks.md's Start-up section (issue 29):
//
//	go run scripts/bench-startup.go [-runs 20] [-serves 10] BIN...
//
// For each build: the init functions' clock summed from GODEBUG=inittrace=1
// (`BIN help`), spawn → the socket accepts a TCP connection for `BIN serve` on
// a fresh data directory and again on the same one, the idle daemon's RSS 3 s
// after it accepts, and the binary's size. Each daemon runs with an empty
// PATH and its own HOME, so no agent is found and nothing else is shared.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	runs := flag.Int("runs", 20, "inittrace runs per build")
	serves := flag.Int("serves", 10, "serve starts per build (each fresh, then again)")
	flag.Parse()
	bins := flag.Args()
	if len(bins) == 0 {
		fmt.Fprintln(os.Stderr, "usage: go run scripts/bench-startup.go [-runs N] [-serves N] BIN...")
		os.Exit(2)
	}
	for i, b := range bins {
		abs, err := filepath.Abs(b) // the daemons run in directories of their own
		if err != nil {
			fail(err)
		}
		bins[i] = abs
	}
	fmt.Printf("date:   %s\nload:   %s", time.Now().UTC().Format("2006-01-02 15:04 UTC"), loadavg())
	fmt.Printf("cpus:   %d\n\n", nproc())

	type result struct{ initMS, initMB, fresh, again, rssMiB []float64 }
	res := make([]result, len(bins))
	for range *runs {
		for i, b := range bins {
			ms, mb := initTrace(b)
			res[i].initMS = append(res[i].initMS, ms)
			res[i].initMB = append(res[i].initMB, mb)
		}
	}
	for range *serves {
		for i, b := range bins {
			fresh, again, rss := serve(b)
			res[i].fresh = append(res[i].fresh, fresh)
			res[i].again = append(res[i].again, again)
			res[i].rssMiB = append(res[i].rssMiB, rss)
		}
	}
	fmt.Printf("load after: %s\n", loadavg())
	fmt.Println("| build | init clock (ms) | init allocated (MB) | spawn → accepts, fresh (ms) | again (ms) | idle RSS (MiB) | binary (MB) |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for i, b := range bins {
		st, err := os.Stat(b)
		if err != nil {
			fail(err)
		}
		r := res[i]
		fmt.Printf("| %s | %s | %s | %s | %s | %s | %.1f |\n", filepath.Base(b), stat(r.initMS), stat(r.initMB), stat(r.fresh), stat(r.again), stat(r.rssMiB), float64(st.Size())/1e6)
	}
}

// stat is "median (min–max)".
func stat(v []float64) string {
	s := slices.Clone(v)
	slices.Sort(s)
	return fmt.Sprintf("%.1f (%.1f–%.1f)", s[len(s)/2], s[0], s[len(s)-1])
}

var initLine = regexp.MustCompile(`^init \S+ @\S+ ms, ([0-9.]+) ms clock, ([0-9]+) bytes`)

// initTrace sums the init functions' clock and allocations of `bin help`.
func initTrace(bin string) (ms, mb float64) {
	cmd := exec.Command(bin, "help")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		fail(fmt.Errorf("%s help: %v\n%s", bin, err, stderr.String()))
	}
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		if m := initLine.FindStringSubmatch(sc.Text()); m != nil {
			c, _ := strconv.ParseFloat(m[1], 64)
			b, _ := strconv.ParseFloat(m[2], 64)
			ms += c
			mb += b / 1e6
		}
	}
	return ms, mb
}

// serve starts bin on a fresh data directory, then again on the same one, and
// times each spawn until a TCP connection to its address is accepted; the
// second run's RSS is read 3 s after that.
func serve(bin string) (fresh, again, rssMiB float64) {
	dir, err := os.MkdirTemp("", "bench-startup-")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(dir)
	start := func() (*exec.Cmd, float64) {
		addr := freeAddr()
		cmd := exec.Command(bin, "serve", "--data", filepath.Join(dir, "data"), "--addr", addr)
		cmd.Dir = dir
		cmd.Env = []string{"HOME=" + dir, "PATH=", "XDG_CONFIG_HOME=" + filepath.Join(dir, "config")}
		t0 := time.Now()
		if err := cmd.Start(); err != nil {
			fail(err)
		}
		for {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.Close()
				return cmd, float64(time.Since(t0).Microseconds()) / 1000
			}
			if time.Since(t0) > 30*time.Second {
				fail(fmt.Errorf("%s serve: no connection in 30 s: %v", bin, err))
			}
			time.Sleep(200 * time.Microsecond)
		}
	}
	stop := func(cmd *exec.Cmd) {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}
	cmd, fresh := start()
	stop(cmd)
	cmd, again = start()
	time.Sleep(3 * time.Second)
	rssMiB = rss(cmd.Process.Pid)
	stop(cmd)
	return fresh, again, rssMiB
}

func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func rss(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		fail(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	fail(fmt.Errorf("no VmRSS for %d", pid))
	return 0
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return string(b)
}

func nproc() int {
	out, _ := exec.Command("nproc").Output()
	n, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	return n
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench-startup:", err)
	os.Exit(1)
}
