// Package relay puts a timestamping relay between parley and an agent
// program, so a benchmark can tell parley's overhead from the agent's: the
// test binary, started by parley as the agent (its TestMain calls Main), runs
// the real program and writes each line crossing its stdin and stdout, with
// the time it arrived, to a log. See docs/benchmarks.md.
package relay

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	envTarget = "PARLEY_RELAY_TARGET"
	envLog    = "PARLEY_RELAY_LOG"
)

// Main runs the relay and exits when this test binary was started as one
// (by Env's variables); otherwise it returns at once. Call it first in TestMain.
func Main() {
	if target := os.Getenv(envTarget); target != "" {
		os.Exit(run(target, os.Args[1:], os.Getenv(envLog)))
	}
}

// Env is what an agent's config needs to run target through this test
// binary as a relay logging to logPath.
func Env(target, logPath string) map[string]string {
	return map[string]string{envTarget: target, envLog: logPath}
}

// run runs target with args, copying stdin and stdout line by line and writing
// "<in|out> <unixnano> <line>" for each line to logPath. The time is taken when
// the line arrives, before it is passed on.
func run(target string, args []string, logPath string) int {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		return 2
	}
	var mu sync.Mutex
	note := func(dir string, ts int64, line []byte) {
		mu.Lock()
		fmt.Fprintf(logf, "%s %d %s", dir, ts, line)
		mu.Unlock()
	}
	cmd := exec.Command(target, args...)
	cmd.Stderr = os.Stderr
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		return 2
	}
	pump := func(dir string, r io.Reader, w io.Writer, closeW func()) {
		br := bufio.NewReaderSize(r, 1<<20)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				ts := time.Now().UnixNano()
				w.Write(line)
				note(dir, ts, line)
			}
			if err != nil {
				if closeW != nil {
					closeW()
				}
				return
			}
		}
	}
	go pump("in", os.Stdin, in, func() { in.Close() })
	pump("out", out, os.Stdout, nil)
	if err := cmd.Wait(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		return 1
	}
	return 0
}

// Line is one line the relay saw.
type Line struct {
	In   bool // on the agent's stdin (else its stdout)
	At   time.Time
	Text string
}

// Read reads the relay's log.
func Read(tb testing.TB, path string) []Line {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var out []Line
	for _, l := range strings.Split(string(data), "\n") {
		dir, rest, ok := strings.Cut(l, " ")
		if !ok {
			continue
		}
		ns, line, _ := strings.Cut(rest, " ")
		n, _ := strconv.ParseInt(ns, 10, 64)
		out = append(out, Line{In: dir == "in", At: time.Unix(0, n), Text: line})
	}
	return out
}

// Overheads matches Claude Code's stream-json lines to what the benchmark
// saw on its socket: sent maps a prompt's text to when it went into the
// socket (→ the time until its line on stdin), received maps a streamed
// chunk's text to when its frame came out of the socket (← the time since its
// text_delta line on stdout). Matched entries are removed from both maps.
func Overheads(lines []Line, sent, received map[string]time.Time) (toStdin, toSocket []time.Duration) {
	for _, l := range lines {
		if l.In {
			for text, at := range sent {
				if strings.Contains(l.Text, `"content":"`+text+`"`) {
					toStdin = append(toStdin, l.At.Sub(at))
					delete(sent, text)
				}
			}
			continue
		}
		if !strings.Contains(l.Text, "text_delta") {
			continue
		}
		for text, at := range received {
			if strings.Contains(l.Text, `"text":"`+text+`"`) {
				toSocket = append(toSocket, at.Sub(l.At))
				delete(received, text)
			}
		}
	}
	return toStdin, toSocket
}

// Report reports d's median and 99th percentile in ms as name-p50-ms and
// name-p99-ms; no samples fails the benchmark.
func Report(b *testing.B, name string, d []time.Duration) {
	b.Helper()
	slices.Sort(d)
	if len(d) == 0 {
		b.Fatalf("%s: no samples", name)
	}
	b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, name+"-p50-ms")
	b.ReportMetric(float64(d[len(d)*99/100].Microseconds())/1000, name+"-p99-ms")
}
