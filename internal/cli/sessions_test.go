package cli_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/sessions"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/scriptd"
)

// claudeTranscript writes the real Claude Code's transcript
// (internal/sessions/testdata) into home's ~/.claude as session id, run in
// cwd, and returns its path.
func claudeTranscript(t *testing.T, home, cwd, id string) string {
	t.Helper()
	const goldenID, goldenCwd = "004e51df-beba-44ee-96d7-de365b89c6d9", "/tmp/TestClaudePrintSessionIsFound2586382052/002/app"
	b, err := os.ReadFile(filepath.Join(testkit.RepoRoot(t), "internal", "sessions", "testdata", "claude-"+testkit.ClaudeVersion+"-print.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.ReplaceAll(bytes.ReplaceAll(b, []byte(goldenID), []byte(id)), []byte(goldenCwd), []byte(cwd))
	dir := filepath.Join(home, ".claude", "projects", strings.NewReplacer("/", "-", ".", "-", "_", "-").Replace(cwd))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, id+".jsonl")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// parley sessions lists a Claude Code session started in a terminal inside
// the roots (table and --json, GET /api/sessions underneath), leaves out the
// one a parley thread holds unless --all, and one outside the roots always.
func TestSessionsListsTheAgentsOwnSessions(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	r := scriptd.Start(t, nil)
	d := r.D()
	srv := remote(d, "a")[:4]
	if code, _, errs := parley(append(append([]string{"send"}, remote(d, "a")...), "hello")...); code != 0 {
		t.Fatalf("send: %d %s", code, errs)
	}
	ths, err := client.API{Server: srv[1], Token: srv[3]}.Threads(t.Context())
	if err != nil || len(ths) != 1 || ths[0].SessionID == "" {
		t.Fatalf("threads: %+v %v", ths, err)
	}
	const mine = "aaaaaaaa-0000-4000-8000-000000000001"
	claudeTranscript(t, home, r.Work, mine)
	claudeTranscript(t, home, r.Work, ths[0].SessionID)
	claudeTranscript(t, home, filepath.Join(home, "elsewhere"), "bbbbbbbb-0000-4000-8000-000000000002")

	code, out, errs := parley(append([]string{"sessions"}, srv...)...)
	if code != 0 || !strings.Contains(out, mine) || !strings.Contains(out, "first prompt here") || !strings.Contains(out, r.Work) ||
		strings.Contains(out, ths[0].SessionID) || strings.Contains(out, "bbbbbbbb") {
		t.Fatalf("sessions: %d %s\n%s", code, errs, out)
	}
	code, out, errs = parley(append([]string{"sessions", "--json", "--all"}, srv...)...)
	var list []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list) != 2 {
		t.Fatalf("sessions --json --all: %d %s\n%s", code, errs, out)
	}
	for _, s := range list {
		for _, k := range []string{"id", "agent", "cwd", "title", "updated_at", "turns", "running", "where", "node"} {
			if _, ok := s[k]; !ok {
				t.Errorf("session %v has no %q", s, k)
			}
		}
		if _, ok := s["path"]; ok {
			t.Errorf("session %v shows its file's path", s)
		}
		if s["agent"] != "claude" || s["turns"] != 1.0 || s["running"] != false {
			t.Errorf("session %v", s)
		}
	}
	l, err := client.API{Server: srv[1], Token: srv[3]}.Sessions(t.Context(), sessions.Filter{Agent: "codex"})
	if err != nil || len(l.Sessions) != 0 {
		t.Errorf("codex's sessions: %+v %v", l, err)
	}
	if code, _, errs := parley("sessions", "--server", srv[1], "--token", "wrong"); code == 0 {
		t.Errorf("sessions with a wrong token: listed (%s)", errs)
	}
}
