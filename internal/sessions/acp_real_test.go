package sessions

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/acp"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/geminiapi"
	"github.com/parleyhq/parley/internal/testkit/openaiapi"
)

// capture keeps a real program's session file as testdata/<name> when
// PARLEY_CAPTURE is set.
func capture(t *testing.T, path, name string) {
	t.Helper()
	if os.Getenv("PARLEY_CAPTURE") == "" {
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("testdata", name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// listOne lists x and wants exactly one session.
func listOne(t *testing.T, x *Index) Session {
	t.Helper()
	l, err := x.List(context.Background(), Filter{})
	if err != nil || len(l) != 1 {
		t.Fatalf("listed %+v %v, want one session", l, err)
	}
	return l[0]
}

// A chat made by the real `gemini -p` in a folder is found with its first
// prompt, one turn and its folder; `gemini --resume` adds a turn to it.
func TestGeminiPrintSessionIsFound(t *testing.T) {
	srv := geminiapi.Start(t, geminiapi.Scenario{Default: ptr(geminiapi.Text("Noted.", 1, 0))})
	home, root := t.TempDir(), t.TempDir()
	cwd := filepath.Join(root, "app")
	if err := os.Mkdir(cwd, 0o700); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), geminiapi.Env(t, srv, home)...)
	gemini := func(args ...string) {
		t.Helper()
		cmd := exec.Command(testkit.GeminiBin(t), args...)
		cmd.Dir, cmd.Env = cwd, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("gemini %q: %v\n%s", args, err, out)
		}
	}
	gemini("-p", "first prompt here")
	x, err := Open(t.TempDir(), []string{root}, Gemini{Dir: filepath.Join(home, ".gemini")})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	s := listOne(t, x)
	if s.Agent != "gemini" || s.Cwd != cwd || s.Title != "first prompt here" || s.Turns != 1 || s.Running || len(s.ID) != 36 {
		t.Fatalf("listed %+v", s)
	}
	capture(t, s.Path, "gemini-"+testkit.GeminiVersion+"-print.jsonl")
	gemini("--resume", s.ID, "-p", "second prompt")
	if again := listOne(t, x); again.ID != s.ID || again.Turns != 2 || again.Title != "first prompt here" {
		t.Fatalf("after the resume: %+v", again)
	}
}

// A session made through the real codex-acp in a folder is found with its
// first prompt, one turn and its folder.
func TestCodexSessionIsFound(t *testing.T) {
	srv := openaiapi.Start(t, openaiapi.Rule{Contains: "first prompt", Reply: openaiapi.Reply{Text: "Noted."}})
	home, root := t.TempDir(), t.TempDir()
	cwd := filepath.Join(root, "app")
	if err := os.Mkdir(cwd, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sink := &turnSink{ended: make(chan struct{}, 1)}
	sess, err := acp.New(nil).Start(ctx, driver.Spec{
		Command: testkit.AgentBin(t, "PARLEY_TEST_CODEX_ACP", "codex-acp"), Env: openaiapi.CodexEnv(t, srv, home), Cwd: cwd,
		Options: map[string]string{acp.OptAuthMethod: "openai-api-key"},
	}, sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Prompt(ctx, driver.Prompt{MessageID: "m1", Text: "first prompt here"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sink.ended:
	case <-ctx.Done():
		t.Fatal("codex did not end its turn")
	}
	x, err := Open(t.TempDir(), []string{root}, Codex{Dir: filepath.Join(home, ".codex")})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	// Running while codex-acp holds the session: its open rollout says so.
	if s := listOne(t, x); !s.Running || s.PID <= 0 || !strings.HasPrefix(s.Where, "pid:") {
		t.Fatalf("while codex-acp runs it: %+v", s)
	}
	if err := sess.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := listOne(t, x)
	if s.Agent != "codex" || s.Cwd != cwd || s.Title != "first prompt here" || s.Turns != 1 || s.Running || !strings.Contains(s.Path, s.ID) {
		t.Fatalf("listed %+v", s)
	}
	capture(t, s.Path, "codex-acp-0.16.0-acp.jsonl")

	// The same session, as the agent lists it itself over ACP (session/list).
	spec := driver.Spec{AgentID: "codex", Command: testkit.AgentBin(t, "PARLEY_TEST_CODEX_ACP", "codex-acp"),
		Env: openaiapi.CodexEnv(t, srv, home), Cwd: cwd, Options: map[string]string{acp.OptAuthMethod: "openai-api-key"}}
	src := NewACP("codex-over-acp", func(ctx context.Context) ([]driver.NativeSession, error) { return acp.New(nil).AllSessions(ctx, spec) })
	src.FirstWait = time.Minute
	y, err := Open(t.TempDir(), []string{root}, src)
	if err != nil {
		t.Fatal(err)
	}
	defer y.Close()
	if l := listOne(t, y); l.ID != s.ID || l.Agent != "codex-over-acp" || l.Cwd != cwd || l.Title != "first prompt here" || l.UpdatedAt.IsZero() {
		t.Fatalf("over ACP: %+v (from the file: %+v)", l, s)
	}
}

// An ACP agent that cannot list its sessions (Gemini CLI: no
// sessionCapabilities.list) lists none and is not asked again.
func TestACPAgentThatCannotListListsNothing(t *testing.T) {
	srv := geminiapi.Start(t, geminiapi.Scenario{Default: ptr(geminiapi.Text("Noted.", 1, 0))})
	home, cwd := t.TempDir(), t.TempDir()
	spec := driver.Spec{AgentID: "gemini", Command: testkit.GeminiBin(t), Args: []string{"--acp"}, Env: geminiapi.Env(t, srv, home), Cwd: cwd,
		Options: map[string]string{acp.OptAuthMethod: "gemini-api-key"}}
	asked := 0
	var askErr error
	src := NewACP("gemini", func(ctx context.Context) ([]driver.NativeSession, error) {
		asked++
		l, err := acp.New(nil).AllSessions(ctx, spec)
		askErr = err
		return l, err
	})
	src.FirstWait, src.MaxAge = time.Minute, time.Nanosecond
	x, err := Open(t.TempDir(), []string{cwd}, src)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	for range 2 {
		if l, err := x.List(context.Background(), Filter{}); err != nil || len(l) != 0 {
			t.Fatalf("listed %+v %v", l, err)
		}
	}
	if asked != 1 || !errors.Is(askErr, driver.ErrUnsupported) {
		t.Fatalf("asked %d times, last: %v", asked, askErr)
	}
}

func ptr[T any](v T) *T { return &v }

// turnSink is a driver.Sink that says when a turn ends.
type turnSink struct{ ended chan struct{} }

func (s *turnSink) Event(chat.Payload)     {}
func (s *turnSink) Received()              {}
func (s *turnSink) SessionID(string)       {}
func (s *turnSink) CardWithdrawn(string)   {}
func (s *turnSink) Waiting(string, string) {}
func (s *turnSink) Exited(error)           {}
func (s *turnSink) TurnEnded(string) {
	select {
	case s.ended <- struct{}{}:
	default:
	}
}
