package acp

import (
	"crypto/rand"
	"encoding/hex"
	"path/filepath"
	"strings"
)

// ownServerEnv is what an agent that starts an HTTP server of its own
// beside ACP needs so the server is not open to every local process.
//
// OpenCode's `acp` serves its HTTP API on 127.0.0.1 (port 4096 when free)
// and talks to it itself; unless OPENCODE_SERVER_PASSWORD is set that API
// takes any request, from any program or user on the machine, and can run
// tools in the thread's folder with no card. A random password per start
// (its own client reads the same variable) closes it: a request without it
// gets 401. A password the person set is kept. docs/agents.md lists what
// each agent listens on.
func ownServerEnv(command string, env []string) []string {
	if strings.TrimSuffix(filepath.Base(command), ".exe") != "opencode" {
		return nil
	}
	for _, kv := range env {
		if strings.HasPrefix(kv, "OPENCODE_SERVER_PASSWORD=") {
			return nil
		}
	}
	b := make([]byte, 24)
	rand.Read(b)
	return []string{"OPENCODE_SERVER_PASSWORD=" + hex.EncodeToString(b)}
}
