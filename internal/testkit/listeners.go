package testkit

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Listener is a socket a process listens on: a TCP socket in LISTEN, or a
// UDP socket bound and not connected to a peer.
type Listener struct {
	Proto string // tcp or udp
	Addr  netip.AddrPort
}

func (l Listener) String() string { return l.Proto + " " + l.Addr.String() }

// TreePIDs lists root and every process below it (by parent, read from
// /proc), and every process in root's process group: an agent and whatever
// it started, in its group or not.
func TreePIDs(root int) []int {
	parent, group := map[int]int{}, map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// Fields after the command's closing parenthesis: state, ppid, pgrp.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) < 3 {
			continue
		}
		parent[pid], _ = strconv.Atoi(f[1])
		group[pid], _ = strconv.Atoi(f[2])
	}
	in := map[int]bool{root: true}
	for changed := true; changed; {
		changed = false
		for pid, pp := range parent {
			if !in[pid] && (in[pp] || group[pid] == root) {
				in[pid], changed = true, true
			}
		}
	}
	out := make([]int, 0, len(in))
	for pid := range in {
		out = append(out, pid)
	}
	slices.Sort(out)
	return out
}

// Listeners lists the sockets the processes pids listen on, from their open
// files (/proc/<pid>/fd) matched against /proc/net/{tcp,tcp6,udp,udp6}.
func Listeners(t testing.TB, pids []int) []Listener {
	t.Helper()
	inodes := map[string]bool{}
	for _, pid := range pids {
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		for _, fd := range fds {
			l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
			if err == nil && strings.HasPrefix(l, "socket:[") {
				inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
			}
		}
	}
	var out []Listener
	for _, src := range []struct{ proto, file, state string }{
		{"tcp", "/proc/net/tcp", "0A"}, {"tcp", "/proc/net/tcp6", "0A"}, // LISTEN
		{"udp", "/proc/net/udp", "07"}, {"udp", "/proc/net/udp6", "07"}, // bound, no peer
	} {
		f, err := os.Open(src.file)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // the header
		for sc.Scan() {
			fl := strings.Fields(sc.Text())
			if len(fl) < 10 || fl[3] != src.state || !inodes[fl[9]] {
				continue
			}
			out = append(out, Listener{Proto: src.proto, Addr: procAddr(t, fl[1])})
		}
		f.Close()
	}
	return out
}

// procAddr reads /proc/net/tcp's "0100007F:1000" (the address in host byte
// order, per 32-bit word; the port in hex).
func procAddr(t testing.TB, s string) netip.AddrPort {
	t.Helper()
	host, port, _ := strings.Cut(s, ":")
	b, err := hex.DecodeString(host)
	if err != nil {
		t.Fatalf("testkit: /proc/net address %q: %v", s, err)
	}
	for i := 0; i+4 <= len(b); i += 4 {
		b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
	ip, _ := netip.AddrFromSlice(b)
	p, _ := strconv.ParseUint(port, 16, 16)
	return netip.AddrPortFrom(ip.Unmap(), uint16(p))
}
