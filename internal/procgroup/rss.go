package procgroup

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
)

// RSS is the resident memory, in bytes, of every process in the group pgid
// (an agent and what it started: shells, MCP servers), read from /proc. It is
// 0 when the group has no process or /proc cannot be read (not Linux).
func RSS(pgid int) int64 {
	if pgid <= 0 {
		return 0
	}
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	page := int64(os.Getpagesize())
	var sum int64
	for _, d := range dirs {
		if _, err := strconv.Atoi(d.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue // it ended meanwhile
		}
		// The command name, in parentheses, may hold spaces: the fields
		// after its last ')' are state, ppid, pgrp, …, rss (the 24th field).
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 22 {
			continue
		}
		if g, _ := strconv.Atoi(string(f[2])); g != pgid {
			continue
		}
		if pages, err := strconv.ParseInt(string(f[21]), 10, 64); err == nil {
			sum += pages * page
		}
	}
	return sum
}
