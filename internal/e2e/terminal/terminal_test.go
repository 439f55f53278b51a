//go:build e2e

// Package terminal_test runs the real Claude Code terminal UI in real tmux behind a
// real daemon (tmux transport), driven through the chat socket, with the scripted
// Messages API as the only stand-in.
package terminal_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/daemon"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/tmux"
	"github.com/parleyhq/parley/internal/driver/tmux/hook"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

// The test binary doubles as the hook command Claude Code runs.
const envHook = "PARLEY_TEST_HOOK"

func TestMain(m *testing.M) {
	if os.Getenv(envHook) == "1" {
		var in io.Reader = os.Stdin
		if dir := os.Getenv(envTrace); dir != "" {
			// The soak's trace: every hook event, as Claude Code sent it, with when.
			b, _ := io.ReadAll(os.Stdin)
			if f, err := os.OpenFile(filepath.Join(dir, "hooks.jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
				fmt.Fprintf(f, "%s %s\n", time.Now().UTC().Format("15:04:05.000"), bytes.TrimSpace(b))
				f.Close()
			}
			in = bytes.NewReader(b)
		}
		if err := hook.Run(context.Background(), in, os.Getenv); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if prog := os.Getenv(envWrap); prog != "" {
		os.Exit(wrap(prog, os.Args[1:]))
	}
	testkit.RunAndRemoveBinary(m) // parley-hook's build
}

// envTrace names a folder for a soak's trace (PARLEY_SOAK_TRACE): the hook
// events Claude Code sent, the daemon's debug log, Claude Code's home.
const envTrace = "PARLEY_SOAK_TRACE"

// envWrap makes the test binary run the named program as its child: tmux
// sends SIGCONT to a pane's own process when it stops, so a soak that freezes
// the agent needs it one level further down.
const envWrap = "PARLEY_TEST_WRAP"

func wrap(prog string, args []string) int {
	cmd := exec.Command(prog, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		return 127
	}
	return 0
}

const wait = 90 * time.Second

const answer = "Hello from the scripted model, on the screen."

// tmuxDaemon is a real daemon whose one agent, claude-tmux, is the real Claude
// Code TUI in tmux on a server of its own.
type tmuxDaemon struct {
	d      *daemon.Daemon
	api    *claudeapi.Server
	work   string
	socket string // the tmux server (-L)
}

// startTmuxDaemon starts it; each adjust may change the configuration first.
func startTmuxDaemon(t testing.TB, rules []claudeapi.Rule, adjust ...func(*config.Config)) *tmuxDaemon {
	t.Helper()
	return startTmuxDaemonWith(t, rules, rigOpts{}, adjust...)
}

// rigOpts are a rig's choices beyond the configuration.
type rigOpts struct {
	// wrapped puts Claude Code one process below the pane's own (see envWrap).
	wrapped bool
	// hook is the hook command; nil is parley-hook, as installed (or this
	// test binary when a soak traces the hook events).
	hook []string
}

// startTmuxDaemonWith starts the daemon with opts.
func startTmuxDaemonWith(t testing.TB, rules []claudeapi.Rule, opts rigOpts, adjust ...func(*config.Config)) *tmuxDaemon {
	t.Helper()
	testkit.NeedsTmux(t)
	testkit.NeedsRealAgent(t)
	b := make([]byte, 4)
	rand.Read(b)
	socket := "parley-e2e-" + hex.EncodeToString(b)
	state, err := os.MkdirTemp("", "pxe") // short: the hook's unix socket path must fit in 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(state) })
	root, _ := filepath.EvalSymlinks(t.TempDir())
	trace := os.Getenv(envTrace)
	if trace != "" {
		root = trace
	}
	home, work := filepath.Join(root, "home"), filepath.Join(root, "work")
	os.MkdirAll(work, 0o755)
	t.Cleanup(func() { exec.Command("tmux", "-L", socket, "kill-server").Run() })

	api := claudeapi.Start(t, claudeapi.Scenario{Rules: rules})
	env := map[string]string{}
	for _, kv := range claudeapi.Env(t, api, home, work) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	cfg := config.Default(filepath.Join(root, "data"), work)
	cfg.Addr = "127.0.0.1:0"
	command := testkit.ClaudeBin(t)
	if opts.wrapped {
		env[envWrap], command = command, os.Args[0]
	}
	cfg.Agents = []config.Agent{{ID: "claude-tmux", Transport: config.TransportTmux, Command: command, Env: env}}
	for _, f := range adjust {
		f(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	drv := &tmux.Driver{Socket: socket, StateDir: state, HookCommand: opts.hook, HookEnv: map[string]string{}}
	if drv.HookCommand == nil {
		drv.HookCommand = []string{testkit.HookBinary(t)}
	}
	opt := daemon.Options{Drivers: map[string]driver.Driver{config.TransportTmux: drv}}
	if trace != "" {
		drv.HookCommand = []string{os.Args[0]}
		drv.HookEnv[envHook] = "1"
		drv.HookEnv[envTrace] = trace
		f, err := os.Create(filepath.Join(trace, "daemon.log"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		opt.Logger = slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	d, err := daemon.Start(context.Background(), cfg, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		d.Shutdown(ctx)
	})
	return &tmuxDaemon{d: d, api: api, work: work, socket: socket}
}

func TestClaudeInTmuxThroughTheSocket(t *testing.T) {
	td := startTmuxDaemon(t, []claudeapi.Rule{
		{Match: claudeapi.Match{Exact: "hello"}, Reply: claudeapi.Text(answer, 3, 5*time.Millisecond)},
		{Match: claudeapi.Match{Exact: "make the file"}, Reply: claudeapi.Bash("touch made-in-tmux", "Make a file")},
		{Match: claudeapi.Match{ToolResult: "Bash"}, Reply: claudeapi.Text("The command ran.", 1, 0)},
	})
	d, api, work := td.d, td.api, td.work
	greet := filepath.Join(work, "greet.go")
	if err := os.WriteFile(greet, []byte("package main\n\nfunc greet() string {\n\treturn \"hello\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The Edit needs the file's path, known once the daemon made the folder;
	// Claude Code edits only a file it has read.
	api.SetScenario(claudeapi.Scenario{Rules: []claudeapi.Rule{
		{Match: claudeapi.Match{Exact: "hello"}, Reply: claudeapi.Text(answer, 3, 5*time.Millisecond)},
		{Match: claudeapi.Match{Exact: "make the file"}, Reply: claudeapi.Bash("touch made-in-tmux", "Make a file")},
		{Match: claudeapi.Match{ToolResult: "Bash"}, Reply: claudeapi.Text("The command ran.", 1, 0)},
		{Match: claudeapi.Match{Exact: "edit the greeting"}, Reply: claudeapi.ToolUse("Read", map[string]any{"file_path": greet})},
		{Match: claudeapi.Match{ToolResult: "Read"}, Reply: claudeapi.ToolUse("Edit", map[string]any{
			"file_path": greet, "old_string": "\treturn \"hello\"", "new_string": "\treturn \"hello, world\""})},
		{Match: claudeapi.Match{ToolResult: "Edit"}, Reply: claudeapi.Text("Edited.", 1, 0)},
	}})

	s := chatsock.Dial(t, "http://"+d.Addr(), d.Token(), client.Options{Chat: "tmux", Since: -1})
	s.WaitFor(0, wait, chatsock.Type(chat.TypeReplayDone), "ready")

	// 1. message → submitted (seen above the input box) → the answer, from the transcript.
	s.Send(chatsock.Msg("m1", "hello"))
	at := s.WaitFor(0, wait, chatsock.Delivery("m1", chat.DeliverySubmitted), "submitted")
	end := s.WaitFor(at, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "turn end")
	if got := chatsock.Chunks(s.Snapshot()[at:end]); !strings.Contains(got, answer) {
		t.Fatalf("answer on the socket %q, want %q\n%s", got, answer, chatsock.Summary(s.Snapshot()))
	}

	// 2. a permission menu on the screen becomes a card; answered from the socket, it
	// really selects the option.
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
		t.Fatalf("no allow-once option: %s", s.Get(i).Raw)
	}
	s.Send(map[string]any{"type": "permission_response", "request_id": card.RequestID, "option_id": allow})
	s.WaitFor(i, wait, chatsock.Type(chat.TypePermissionResolved), "resolved")
	s.WaitFor(i, wait, chatsock.PromptDone("m2", chat.StopEndTurn), "tool turn end")
	testkit.Eventually(t, 10*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(work, "made-in-tmux"))
		return err == nil
	}, "the tool ran")
	if res, ok := api.ToolResultFor("Bash"); !ok || res.IsError {
		t.Fatalf("the model got %+v (found %v), want the tool's success", res, ok)
	}

	// 3. an Edit's card carries the tool's input from the hook: what will change,
	// shown before it is answered (the dashboard draws the diff from it).
	end = s.Len()
	s.Send(chatsock.Msg("m3", "edit the greeting"))
	i = s.WaitFor(end, wait, chatsock.Type(chat.TypePermissionRequest), "the Edit's permission card")
	card = chat.PermissionRequest{}
	s.Get(i).Decode(&card)
	var in struct {
		FilePath  string `json:"file_path"`
		OldString string `json:"old_string"`
		NewString string `json:"new_string"`
	}
	json.Unmarshal(card.Tool.Input, &in)
	if card.Tool.Name != "Edit" || in.FilePath != greet || in.OldString != "\treturn \"hello\"" || in.NewString != "\treturn \"hello, world\"" {
		t.Fatalf("the Edit's card: %s; want its name and the edit's old and new text", s.Get(i).Raw)
	}
	for _, o := range card.Options {
		if o.Kind == chat.OptionAllowOnce {
			s.Send(map[string]any{"type": "permission_response", "request_id": card.RequestID, "option_id": o.ID})
		}
	}
	s.WaitFor(i, wait, chatsock.PromptDone("m3", chat.StopEndTurn), "the edit's turn end")
}
