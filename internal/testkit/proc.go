package testkit

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// PIDsWithEnv lists the processes whose environment holds kv ("KEY=value")
// and whose command line contains cmd: a test's agent processes, found by the
// HOME it gave them.
func PIDsWithEnv(kv, cmd string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !strings.Contains("\x00"+string(env), "\x00"+kv+"\x00") {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.Contains(string(cmdline), cmd) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// UnreadStdin reports how many bytes wait unread in the pipe on pid's stdin
// (FIONREAD): a line written to an agent that it has not read yet.
func UnreadStdin(pid int) (int, error) {
	fd, err := syscall.Open(filepath.Join("/proc", strconv.Itoa(pid), "fd", "0"), syscall.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return 0, err
	}
	defer syscall.Close(fd)
	var n int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TIOCINQ, uintptr(unsafe.Pointer(&n))); e != 0 {
		return 0, e
	}
	return int(n), nil
}
