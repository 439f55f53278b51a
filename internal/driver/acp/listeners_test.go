package acp

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/testkit"
)

// The real OpenCode, started by parley, serves its own HTTP API beside ACP:
// it must listen on loopback only, and refuse a request without the password
// parley gave it (else any local program could run tools in the thread's
// folder with no card).
func TestOpenCodeServerNeedsAPassword(t *testing.T) {
	t.Parallel()
	bin := testkit.OpenCodeBin(t)
	home := t.TempDir()
	cwd := filepath.Join(t.TempDir(), "work")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // it starts slowly on two cores
	defer cancel()
	s, err := New(nil).Start(ctx, driver.Spec{Command: bin, Args: []string{"acp"}, Cwd: cwd,
		Env: []string{"HOME=" + home, "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1",
			"OPENCODE_DISABLE_LSP_DOWNLOAD=1", "OPENCODE_DISABLE_DEFAULT_PLUGINS=1"}}, &recSink{})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	ls := listenersOf(t, s.(*Session).pgid)
	if len(ls) == 0 {
		t.Fatal("OpenCode listens on nothing: the check no longer sees its server (was 127.0.0.1:4096)")
	}
	for _, a := range ls {
		if !a.IP.IsLoopback() {
			t.Errorf("OpenCode listens on %s, beyond loopback", a)
			continue
		}
		resp, err := http.Get("http://" + a.String() + "/session")
		if err != nil {
			t.Fatalf("GET its API: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("OpenCode's API on %s answered %d to a request without the password, want 401", a, resp.StatusCode)
		}
	}
}

// listenersOf lists the TCP listeners of the processes in process group pgid
// (from /proc: the group's sockets matched against /proc/net/tcp{,6}).
func listenersOf(t *testing.T, pgid int) []*net.TCPAddr {
	t.Helper()
	inodes := map[string]bool{}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// Fields after the command's closing parenthesis: state, ppid, pgrp.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) < 3 || f[2] != strconv.Itoa(pgid) {
			continue
		}
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		for _, fd := range fds {
			l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
			if err == nil && strings.HasPrefix(l, "socket:[") {
				inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
			}
		}
	}
	var out []*net.TCPAddr
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(file)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // the header
		for sc.Scan() {
			fl := strings.Fields(sc.Text())
			if len(fl) < 10 || fl[3] != "0A" || !inodes[fl[9]] { // 0A: LISTEN
				continue
			}
			out = append(out, parseProcAddr(t, fl[1]))
		}
		f.Close()
	}
	return out
}

// parseProcAddr reads /proc/net/tcp's "0100007F:1000" (host byte order, per
// 32-bit word).
func parseProcAddr(t *testing.T, s string) *net.TCPAddr {
	host, port, _ := strings.Cut(s, ":")
	b, err := hex.DecodeString(host)
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	for i := 0; i+4 <= len(b); i += 4 {
		b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
	p, _ := strconv.ParseUint(port, 16, 16)
	return &net.TCPAddr{IP: net.IP(b), Port: int(p)}
}
