//go:build e2e

// Package acp_test drives parley's ACP agent side with a client not written
// here: the official TypeScript SDK, from a Node script that runs `parley acp`,
// while a web socket on the same thread watches.
package acp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/cli"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/daemon"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/scripted"
)

// SDKVersion is the pinned @agentclientprotocol/sdk (scripts/test.sh installs it).
const SDKVersion = "2.4.0"

// TestMain lets the test binary be `parley` itself when the Node script starts
// it as `parley acp`.
func TestMain(m *testing.M) {
	if os.Getenv("PARLEY_ACP_TEST_MAIN") == "1" {
		os.Exit(cli.Main(cli.Build{Version: "test"}, os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// sdkDir is where scripts/test.sh installs the pinned TypeScript SDK. A missing or
// other version fails the test (never skips it).
func sdkDir(t *testing.T) string {
	t.Helper()
	testkit.NeedsNode(t)
	dir := filepath.Join(testkit.RepoRoot(t), ".cache", "npm", "acp-sdk")
	pkg := filepath.Join(dir, "node_modules", "@agentclientprotocol", "sdk", "package.json")
	b, err := os.ReadFile(pkg)
	if err != nil || !strings.Contains(string(b), `"version": "`+SDKVersion+`"`) {
		t.Fatalf("@agentclientprotocol/sdk@%s is not installed in %s (run scripts/test.sh, which installs it): %v", SDKVersion, dir, err)
	}
	return dir
}

type frames struct {
	mu  sync.Mutex
	evs []client.Event
}

func (f *frames) add(ev client.Event) { f.mu.Lock(); f.evs = append(f.evs, ev); f.mu.Unlock() }

// find returns the first event of type typ that match accepts.
func (f *frames) find(typ string, match func(client.Event) bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ev := range f.evs {
		if ev.Type == typ && (match == nil || match(ev)) {
			return true
		}
	}
	return false
}

func TestTypeScriptClientOnHostedThread(t *testing.T) {
	sdk := sdkDir(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data, work := filepath.Join(root, "data"), filepath.Join(root, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default(data, work)
	cfg.Addr = "127.0.0.1:0"
	cfg.Agents = []config.Agent{{ID: "echo", Transport: config.TransportStream, Command: "scripted"}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	d, err := daemon.Start(context.Background(), cfg, daemon.Options{Drivers: map[string]driver.Driver{"stream": &scripted.Driver{}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := d.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	// parley acp finds the daemon as every client command does: <data>/addr.
	if err := os.WriteFile(filepath.Join(data, "addr"), []byte(d.Addr()), 0o600); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	// A browser starts the thread.
	web, _, err := client.Dial(ctx, "http://"+d.Addr(), d.Token(), client.Options{Chat: "w1", Since: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer web.CloseNow()
	seen := &frames{}
	var thread chat.ThreadID
	if err := web.Send(ctx, map[string]any{"type": "message", "message_id": "web-1", "text": "say hi"}); err != nil {
		t.Fatal(err)
	}
	for thread == "" {
		ev, err := web.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == chat.TypePromptDone {
			thread = ev.Thread
		}
	}
	go func() {
		for {
			ev, err := web.Next(ctx)
			if err != nil {
				return
			}
			seen.add(ev)
		}
	}()

	// The editor attaches to it.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	acpCmd, _ := json.Marshal([]string{self, "acp", "--data", data, "--thread", string(thread)})
	node := exec.CommandContext(ctx, "node", filepath.Join("testdata", "client.mjs"))
	node.Env = append(os.Environ(), "ACP_SDK_DIR="+sdk, "ACP_CWD="+work, "PARLEY_ACP_CMD="+string(acpCmd), "PARLEY_ACP_TEST_MAIN=1")
	node.Stderr = testWriter{t}
	node.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	node.Cancel = func() error { return syscall.Kill(-node.Process.Pid, syscall.SIGKILL) }
	node.WaitDelay = 5 * time.Second
	stdout, err := node.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	steps := make(chan map[string]any, 64)
	go func() {
		defer close(steps)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("node printed a non-JSON line: %q", sc.Text())
				continue
			}
			steps <- m
		}
	}()
	next := func(want string) map[string]any {
		t.Helper()
		for {
			select {
			case m, ok := <-steps:
				if !ok {
					t.Fatalf("node ended before step %q", want)
				}
				if m["step"] == "error" {
					t.Fatalf("node: %v", m["message"])
				}
				if m["step"] == want {
					return m
				}
				if m["step"] != "child_exit" {
					t.Fatalf("step: got %v, want %q", m, want)
				}
			case <-ctx.Done():
				t.Fatalf("waiting for step %q: %v", want, ctx.Err())
			}
		}
	}

	// nextAll reads the next steps until it has each of want, in any order.
	nextAll := func(want ...string) map[string]map[string]any {
		t.Helper()
		got := map[string]map[string]any{}
		for len(got) < len(want) {
			select {
			case m, ok := <-steps:
				if !ok {
					t.Fatalf("node ended before steps %v (got %v)", want, got)
				}
				step, _ := m["step"].(string)
				switch {
				case step == "error":
					t.Fatalf("node: %v", m["message"])
				case slices.Contains(want, step) && got[step] == nil:
					got[step] = m
				case step != "child_exit":
					t.Fatalf("step: got %v, want one of %v", m, want)
				}
			case <-ctx.Done():
				t.Fatalf("waiting for steps %v: %v", want, ctx.Err())
			}
		}
		return got
	}

	m := next("initialize")
	if m["loadSession"] != true || m["agent"] != "parley" {
		t.Errorf("initialize: got %v, want loadSession true and agent parley", m)
	}
	m = next("new")
	if got := m["thread"]; got != string(thread) {
		t.Fatalf("session/new thread: got %v, want the browser's %s", got, thread)
	}
	sessionID, _ := m["sessionId"].(string)

	m = next("stream")
	if m["stopReason"] != "end_turn" || m["text"] != "c1 c2 c3 c4 c5 " {
		t.Errorf("stream: got %v, want end_turn and \"c1 c2 c3 c4 c5 \"", m)
	}
	testkit.Eventually(t, 5*time.Second, func() bool {
		return seen.find(chat.TypeUserMessage, func(ev client.Event) bool {
			var um chat.UserMessage
			return ev.Decode(&um) == nil && um.Text == "stream 5 10ms" && um.From.Channel == "acp" && um.From.Chat == sessionID
		}) && seen.find(chat.TypeAgentChunk, func(ev client.Event) bool {
			var c chat.AgentChunk
			return ev.Decode(&c) == nil && c.Text == "c5 "
		})
	}, "the browser did not see the editor's message and the streamed answer")

	m = next("permission")
	if opts, _ := json.Marshal(m["options"]); string(opts) != `["allow","reject"]` {
		t.Errorf("permission options: got %s, want [\"allow\",\"reject\"]", opts)
	}
	m = next("permission_done")
	if m["stopReason"] != "end_turn" || !strings.Contains(m["text"].(string), "permission: allow") {
		t.Errorf("permission turn: got %v, want end_turn and \"permission: allow\"", m)
	}
	testkit.Eventually(t, 5*time.Second, func() bool {
		return seen.find(chat.TypePermissionResolved, func(ev client.Event) bool {
			var r chat.PermissionResolved
			return ev.Decode(&r) == nil && r.OptionID == "allow" && r.By != nil && r.By.Channel == "acp"
		})
	}, "the browser did not see the card resolved by the editor")

	// A card answered in the browser cancels the editor's pending request.
	m = next("permission_pending")
	rid, _ := m["requestId"].(string)
	if err := web.Send(ctx, map[string]any{"type": "permission_response", "request_id": rid, "option_id": "reject"}); err != nil {
		t.Fatal(err)
	}
	// The request's cancellation and the prompt's answer travel apart (the
	// SDK sends a cancellation on its own): either may come first.
	got := nextAll("permission_aborted", "elsewhere_done")
	if m = got["permission_aborted"]; m["requestId"] != rid {
		t.Errorf("aborted request: got %v, want %s", m["requestId"], rid)
	}
	m = got["elsewhere_done"]
	if m["stopReason"] != "end_turn" || !strings.Contains(m["text"].(string), "permission: reject") {
		t.Errorf("turn answered elsewhere: got %v, want end_turn and \"permission: reject\"", m)
	}

	m = next("cancel")
	if m["stopReason"] != "cancelled" {
		t.Errorf("cancel: got %v, want stopReason cancelled", m)
	}
	if n, _ := m["chunks"].(float64); n < 1 || n > 900 {
		t.Errorf("cancel: got %v chunks, want the slow answer cut short", n)
	}
	testkit.Eventually(t, 5*time.Second, func() bool {
		return seen.find(chat.TypePromptDone, func(ev client.Event) bool {
			var p chat.PromptDone
			return ev.Decode(&p) == nil && p.StopReason == chat.StopCancelled
		})
	}, "the browser did not see the turn cancelled")

	m = next("list")
	if l, _ := json.Marshal(m["sessions"]); !strings.Contains(string(l), sessionID) {
		t.Errorf("session/list: got %s, want it to hold %s", l, sessionID)
	}
	m = next("ext")
	if l, _ := json.Marshal(m["methods"]); !strings.Contains(string(l), "_parley/delivery") || !strings.Contains(string(l), "_parley/prompt_done") {
		t.Errorf("extension notifications: got %s, want _parley/delivery and _parley/prompt_done among them", l)
	}
	next("done")
	if err := node.Wait(); err != nil {
		t.Errorf("node: %v", err)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("node: %s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
