package acp

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/geminiapi"
	"github.com/parleyhq/parley/internal/testkit/openaiapi"
)

// Each agent program parley starts over ACP, started as parley starts it
// (ACP initialize and session/new done), listens on nothing of its own:
// its process tree has no TCP or UDP listener at all. OpenCode's one
// listener is TestOpenCodeServerNeedsAPassword's (docs/agents.md, "Listeners
// of their own").

func TestGeminiListensOnNothing(t *testing.T) {
	t.Parallel()
	r := newRig(t, geminiapi.Scenario{})
	s, _ := r.start("")
	noListeners(t, "Gemini CLI", s)
}

func TestCodexListensOnNothing(t *testing.T) {
	t.Parallel()
	s, _, _, _ := startCodex(t, openaiapi.Start(t))
	noListeners(t, "codex-acp", s)
}

func noListeners(t *testing.T, agent string, s *Session) {
	t.Helper()
	pids := testkit.TreePIDs(s.pgid)
	if ls := testkit.Listeners(t, pids); len(ls) != 0 {
		t.Errorf("%s (processes %v) listens on %v: nothing is expected (docs/agents.md)", agent, pids, ls)
	}
}

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
	ls := testkit.Listeners(t, testkit.TreePIDs(s.(*Session).pgid))
	if len(ls) == 0 {
		t.Fatal("OpenCode listens on nothing: the check no longer sees its server (was 127.0.0.1:4096)")
	}
	for _, l := range ls {
		if l.Proto != "tcp" || !l.Addr.Addr().IsLoopback() {
			t.Errorf("OpenCode listens on %s, beyond loopback", l)
			continue
		}
		resp, err := http.Get("http://" + l.Addr.String() + "/session")
		if err != nil {
			t.Fatalf("GET its API: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("OpenCode's API on %s answered %d to a request without the password, want 401", l, resp.StatusCode)
		}
	}
}
