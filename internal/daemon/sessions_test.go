package daemon_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/sessions"
)

// writeClaudeSession writes a one-turn Claude Code transcript for a session
// run in cwd into home's ~/.claude, as a person's `claude` would have.
func writeClaudeSession(t testing.TB, home, cwd, id, prompt string) {
	t.Helper()
	dir := filepath.Join(home, ".claude", "projects", strings.NewReplacer("/", "-", ".", "-", "_", "-").Replace(cwd))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	rec := fmt.Sprintf(`{"type":"user","message":{"role":"user","content":%q},"cwd":%q,"sessionId":%q,"timestamp":"2026-12-01T10:00:00Z"}`+"\n", prompt, cwd, id)
	if err := os.WriteFile(filepath.Join(dir, id+".jsonl"), []byte(rec), 0o600); err != nil {
		t.Fatal(err)
	}
}

// At a cluster's hub GET /api/sessions lists every machine's agent sessions,
// each machine's inside its own roots and named by its node (the hub's own
// ""); ?machine= one machine's; a machine that goes away keeps its sessions
// in the list, marked stale.
func TestHubListsEveryMachinesSessions(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	hub := startHub(t)
	envs := map[string]*testEnv{"": hub}
	for _, n := range []string{"b", "c", "d"} {
		envs[n] = joinNode(t, hub, n)
	}
	for node, e := range envs {
		writeClaudeSession(t, home, e.root, "0000000"+node+"-0000-4000-8000-000000000000", "on machine ["+node+"]")
	}
	list := func(query string) sessions.Listing {
		t.Helper()
		var l sessions.Listing
		if code := hub.getJSON("/api/sessions"+query, &l); code != 200 {
			t.Fatalf("GET /api/sessions%s: %d", query, code)
		}
		return l
	}
	l := list("")
	if len(l.Sessions) != 4 || len(l.Machines) != 4 {
		t.Fatalf("listed %+v", l)
	}
	for _, s := range l.Sessions {
		if s.Title != "on machine ["+s.Node+"]" || s.Cwd != envs[s.Node].root {
			t.Errorf("session %+v: not its machine's", s)
		}
	}
	for _, m := range l.Machines {
		if m.Stale || m.ListedAt.IsZero() {
			t.Errorf("machine %+v", m)
		}
	}
	if l := list("?machine=b"); len(l.Sessions) != 1 || l.Sessions[0].Node != "b" {
		t.Fatalf("?machine=b: %+v", l)
	}
	if l := list("?machine=hub"); len(l.Sessions) != 1 || l.Sessions[0].Node != "" {
		t.Fatalf("?machine=hub: %+v", l)
	}
	if code := hub.getJSON("/api/sessions?machine=nowhere", nil); code != 404 {
		t.Errorf("?machine=nowhere: %d, want 404", code)
	}

	envs["c"].stop()
	waitMachine(t, hub, "c", false)
	l = list("")
	if len(l.Sessions) != 4 {
		t.Fatalf("with c away: %+v", l)
	}
	for _, m := range l.Machines {
		if m.Stale != (m.Node == "c") {
			t.Errorf("with c away, machine %+v", m)
		}
	}
}
