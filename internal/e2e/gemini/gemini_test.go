//go:build e2e

// Package gemini_test runs the real Gemini CLI (ACP transport) behind a real
// daemon, driven through the chat socket, with the scripted Gemini API as the
// only stand-in.
package gemini_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/daemon"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/acp"
	"github.com/parleyhq/parley/internal/driver/tmux"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/geminiapi"
)

// Gemini CLI loads its tools at start: allow it time.
const wait = 120 * time.Second

const answer = "Gemini, scripted, in several pieces."

func scenario() geminiapi.Scenario {
	return geminiapi.Scenario{Rules: []geminiapi.Rule{
		{Match: geminiapi.Match{Exact: "hello"}, Reply: geminiapi.Text(answer, 4, 5*time.Millisecond)},
		{Match: geminiapi.Match{Exact: "typed in the pane"}, Reply: geminiapi.Text("Answered in the pane.", 2, 5*time.Millisecond)},
		{Match: geminiapi.Match{Exact: "make the file"}, Reply: geminiapi.Shell("touch made-by-gemini", "Make a file")},
		{Match: geminiapi.Match{Exact: "make another"}, Reply: geminiapi.Shell("touch made-again", "Make another file")},
		{Match: geminiapi.Match{Exact: "make a third"}, Reply: geminiapi.Shell("touch made-third", "Make a third file")},
		{Match: geminiapi.Match{Exact: "call it fourth instead"}, Reply: geminiapi.Text("I will call it fourth.", 1, 0)},
		{Match: geminiapi.Match{FunctionResponse: "run_shell_command"}, Reply: geminiapi.Text("The command ran.", 1, 0)},
		{Match: geminiapi.Match{Exact: "slowly"}, Reply: geminiapi.Text(strings.Repeat("tick ", 300), 300, 50*time.Millisecond)},
		// parley's own MCP tool, as Gemini CLI names it to the model.
		{Match: geminiapi.Match{Exact: "ask the person"}, Reply: geminiapi.Call("mcp_parley_ask_person", map[string]any{"question": "Which colour?", "options": []string{"Red", "Blue"}})},
		{Match: geminiapi.Match{FunctionResponse: "mcp_parley_ask_person"}, Reply: geminiapi.Text("Thanks for the answer.", 1, 0)},
	}}
}

type rig struct {
	t    *testing.T
	d    *daemon.Daemon
	cfg  config.Config
	opt  daemon.Options
	api  *geminiapi.Server
	home string
	work string
	env  []string // Gemini CLI's environment (KEY=VALUE)
}

func newRig(t *testing.T) *rig {
	t.Helper()
	testkit.NeedsRealAgent(t)
	root, _ := filepath.EvalSymlinks(t.TempDir())
	home, work := filepath.Join(root, "home"), filepath.Join(root, "work")
	for _, d := range []string{home, work} {
		os.MkdirAll(d, 0o755)
	}
	api := geminiapi.Start(t, scenario())
	env := map[string]string{}
	envList := geminiapi.Env(t, api, home)
	for _, kv := range envList {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	cfg := config.Default(filepath.Join(root, "data"), work)
	cfg.Addr = "127.0.0.1:0"
	cfg.Agents = []config.Agent{{ID: "gemini", Transport: config.TransportACP, Command: testkit.GeminiBin(t),
		Args: []string{"--acp"}, Env: env, Options: map[string]string{"auth_method": "gemini-api-key"}}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, cfg: cfg, api: api, home: home, work: work, env: envList,
		// Its sessions listed from the agent's HOME; the log shown when a test fails.
		opt: daemon.Options{AgentHome: home, Logger: testkit.FailureLog(t)}}
	r.start()
	t.Cleanup(r.stop)
	return r
}

// start starts the daemon (again, after stop) on its data directory.
func (r *rig) start() {
	r.t.Helper()
	opt := r.opt
	// The tmux driver adopts a Gemini TUI a person runs in a tmux pane.
	opt.Drivers = map[string]driver.Driver{config.TransportACP: acp.New(nil), config.TransportTmux: tmux.New(nil, filepath.Join(r.cfg.DataDir, "tmux"))}
	d, err := daemon.Start(context.Background(), r.cfg, opt)
	if err != nil {
		r.t.Fatal(err)
	}
	r.d = d
}

// stop shuts the daemon down (nothing when it is stopped).
func (r *rig) stop() {
	if r.d == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := r.d.Shutdown(ctx); err != nil {
		r.t.Errorf("shutdown: %v", err)
	}
	r.d = nil
}

func (r *rig) dial(t *testing.T, chatID string) *chatsock.Conn {
	s := chatsock.Dial(t, "http://"+r.d.Addr(), r.d.Token(), client.Options{Chat: chatID, Since: -1})
	s.WaitFor(0, wait, chatsock.Type(chat.TypeReplayDone), "replay_done")
	return s
}

// One daemon, one Gemini session, the socket-level path in order: a
// streamed turn, a shell tool allowed through its card, one rejected, a stop.
func TestGeminiThroughTheSocket(t *testing.T) {
	r := newRig(t)
	s := r.dial(t, "g")

	s.Send(chatsock.Msg("m1", "hello"))
	at := s.WaitFor(0, wait, chatsock.Delivery("m1", chat.DeliverySubmitted), "submitted")
	end := s.WaitFor(at, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "end_turn")
	if got := chatsock.Chunks(s.Snapshot()[at:end]); got != answer {
		t.Fatalf("streamed text %q, want %q", got, answer)
	}

	s.Send(chatsock.Msg("m2", "make the file"))
	i := s.WaitFor(end, wait, chatsock.Type(chat.TypePermissionRequest), "permission card")
	var card chat.PermissionRequest
	s.Get(i).Decode(&card)
	allow := ""
	for _, o := range card.Options {
		if o.Kind == chat.OptionAllowOnce {
			allow = o.ID
		}
	}
	if allow == "" {
		t.Fatalf("no allow-once option on %s", s.Get(i).Raw)
	}
	s.Send(map[string]any{"type": "permission_response", "request_id": card.RequestID, "option_id": allow})
	end = s.WaitFor(i, wait, chatsock.PromptDone("m2", chat.StopEndTurn), "tool turn done")
	if _, err := os.Stat(filepath.Join(r.work, "made-by-gemini")); err != nil {
		t.Fatalf("the command did not run: %v", err)
	}
	if _, ok := r.api.FunctionResponse("run_shell_command"); !ok {
		t.Fatal("the command's result never reached the model")
	}

	s.Send(chatsock.Msg("m3", "slowly"))
	j := s.WaitFor(end, wait, chatsock.Type(chat.TypeAgentChunk), "streaming")
	start := time.Now()
	s.Send(map[string]any{"type": "stop"})
	s.WaitFor(j, wait, chatsock.PromptDone("m3", chat.StopCancelled), "cancelled")
	t.Logf("stop → cancelled in %v", time.Since(start))

	s.Send(chatsock.Msg("m4", "hello"))
	s.WaitFor(j, wait, chatsock.PromptDone("m4", chat.StopEndTurn), "the next message works")
}

// The fault issue 11 found, made deterministic, over ACP: session/prompt is
// written to Gemini CLI's stdin while it cannot read it (stopped), then it is
// killed. The receipt stays "delivering" while the line sits unread, then says
// "failed" with the reason; the model never got the text.
func TestPromptUnreadWhenTheAgentDiesIsNotSubmitted(t *testing.T) {
	r := newRig(t)
	s := r.dial(t, "unread")
	s.Send(chatsock.Msg("m0", "hello"))
	at := s.WaitFor(0, wait, chatsock.PromptDone("m0", chat.StopEndTurn), "a first, whole turn")
	pids := testkit.PIDsWithEnv("HOME="+r.home, "gemini")
	if len(pids) == 0 {
		t.Fatal("no Gemini CLI process found")
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	}

	before := len(r.api.Requests())
	s.Send(chatsock.Msg("m1", "hello"))
	at = s.WaitFor(at, wait, chatsock.Delivery("m1", chat.DeliveryDelivering), "delivering")
	testkit.Eventually(t, wait, func() bool {
		for _, pid := range pids {
			if n, err := testkit.UnreadStdin(pid); err == nil && n > 0 {
				return true
			}
		}
		return false
	}, "the prompt never reached the agent's stdin pipe")
	// parley's own work is done within milliseconds (the line is written); a
	// "submitted" for an unread line would come now. Give it a second.
	time.Sleep(time.Second)
	for _, ev := range s.Snapshot()[at:] {
		if chatsock.Delivery("m1", chat.DeliverySubmitted)(ev) {
			t.Fatalf("submitted while the agent could not read its stdin:\n%s", chatsock.Summary(s.Snapshot()))
		}
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	i := s.WaitFor(at, wait, chatsock.Delivery("m1", chat.DeliveryFailed), "failed")
	var d chat.Delivery
	if err := s.Get(i).Decode(&d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.Detail, "exited") {
		t.Errorf("failed detail %q: want the exit as the reason", d.Detail)
	}
	for _, ev := range s.Snapshot() {
		if chatsock.Delivery("m1", chat.DeliverySubmitted)(ev) {
			t.Fatalf("a message that never got there was submitted:\n%s", chatsock.Summary(s.Snapshot()))
		}
	}
	if n := len(r.api.Requests()); n != before {
		t.Fatalf("the model got %d requests after the prompt was written to a stopped agent", n-before)
	}
}
