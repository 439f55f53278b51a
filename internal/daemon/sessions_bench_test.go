package daemon_test

import (
	"fmt"
	"testing"

	"github.com/parleyhq/parley/internal/sessions"
)

// BenchmarkHubSessions lists the agent sessions at a hub with 3 nodes, each
// machine with 1,000 Claude Code transcripts of its own (its own agent home,
// inside its roots), over GET /api/sessions, after a first listing (the
// indexes built, each node's answer kept at the hub). Run:
//
//	go test -run '^$' -bench BenchmarkHubSessions -benchtime 20x ./internal/daemon/
func BenchmarkHubSessions(b *testing.B) {
	hubHome := b.TempDir()
	b.Setenv("HOME", hubHome)
	b.Setenv("CLAUDE_CONFIG_DIR", "")
	hub := startHub(b)
	envs := map[string]*testEnv{"": hub}
	homes := map[string]string{"": hubHome}
	for _, n := range []string{"b", "c", "d"} {
		e := joinNode(b, hub, n)
		e.stop() // again, reading its own agent home
		homes[n] = b.TempDir()
		e.opt.AgentHome = homes[n]
		e.start()
		waitMachine(b, hub, n, true)
		envs[n] = e
	}
	for node, e := range envs {
		for i := range 1000 {
			writeClaudeSession(b, homes[node], e.root, fmt.Sprintf("%08d-%04x-4000-8000-000000000000", i, len(node)), fmt.Sprintf("prompt %d on [%s]", i, node))
		}
	}
	list := func() {
		var l sessions.Listing
		if code := hub.getJSON("/api/sessions", &l); code != 200 || len(l.Sessions) != 4000 {
			b.Fatalf("listed %d (%d): %+v", len(l.Sessions), code, l.Machines)
		}
		for _, m := range l.Machines {
			if m.Stale {
				b.Fatalf("machine %+v", m)
			}
		}
	}
	list() // the first listing: every index built
	for b.Loop() {
		list()
	}
}
