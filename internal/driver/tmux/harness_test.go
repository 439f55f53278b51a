package tmux

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/tmux/ctl"
	"github.com/parleyhq/parley/internal/driver/tmux/pane"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

func TestMain(m *testing.M) {
	if prog := os.Getenv(envTestWrap); prog != "" {
		os.Exit(wrap(prog, os.Args[1:]))
	}
	code := m.Run()
	testkit.RemoveBinaries() // parley-hook, Claude Code's hook command here as installed
	if code == 0 {
		// Every goroutine a session starts must end with Close.
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// envTestWrap makes the test binary run the named program as its child and
// wait for it. tmux sends SIGCONT to a pane's own process when it stops, so a
// test that stops the agent needs the agent one level further down.
const envTestWrap = "PARLEY_TEST_WRAP"

func wrap(prog string, args []string) int {
	cmd := exec.Command(prog, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = os.Environ()
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		return 127
	}
	return 0
}

// sink records what a session reports.
type sink struct {
	mu        sync.Mutex
	events    []chat.Payload
	ids       []string
	turns     []string
	withdrawn []string
	exited    []error
	changed   chan struct{}
	onTurn    func() // called at each TurnEnded, before it is recorded
}

func (s *sink) onTurnEnded(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onTurn = f
}

func newSink() *sink { return &sink{changed: make(chan struct{})} }

func (s *sink) note() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *sink) Event(p chat.Payload) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, p)
	s.note()
}
func (s *sink) SessionID(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids = append(s.ids, id)
	s.note()
}
func (s *sink) TurnEnded(r string) {
	s.mu.Lock()
	f := s.onTurn
	s.mu.Unlock()
	if f != nil {
		f()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turns = append(s.turns, r)
	s.note()
}

// Received is never called: the tmux driver's Prompt is its own proof.
func (s *sink) Received() {}
func (s *sink) CardWithdrawn(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.withdrawn = append(s.withdrawn, id)
	s.note()
}

// Waiting is recorded as the queued receipt the lane makes of it.
func (s *sink) Waiting(id, reason string) {
	s.Event(chat.Delivery{MessageID: id, State: chat.DeliveryQueued, Detail: reason})
}
func (s *sink) Exited(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.exited = append(s.exited, err)
	s.note()
}

func (s *sink) snapshot() []chat.Payload {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]chat.Payload(nil), s.events...)
}

func (s *sink) turnCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.turns)
}

func (s *sink) text() string {
	var b strings.Builder
	for _, p := range s.snapshot() {
		if c, ok := p.(chat.AgentChunk); ok {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

func (s *sink) permissions() []chat.PermissionRequest {
	var out []chat.PermissionRequest
	for _, p := range s.snapshot() {
		if r, ok := p.(chat.PermissionRequest); ok {
			out = append(out, r)
		}
	}
	return out
}

func (s *sink) questions() []chat.Question {
	var out []chat.Question
	for _, p := range s.snapshot() {
		if r, ok := p.(chat.Question); ok {
			out = append(out, r)
		}
	}
	return out
}

func (s *sink) deliveries() []chat.Delivery {
	var out []chat.Delivery
	for _, p := range s.snapshot() {
		if r, ok := p.(chat.Delivery); ok {
			out = append(out, r)
		}
	}
	return out
}

// harness is one tmux server, one stand-in model API and one Claude Code home.
type harness struct {
	t     testing.TB
	srv   *claudeapi.Server
	drv   *Driver
	c     *ctl.Client
	cwd   string
	env   []string
	claud string
	home  string // Claude Code's HOME
}

func randomName(t testing.TB) string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func newHarness(t testing.TB, sc claudeapi.Scenario) *harness {
	t.Helper()
	testkit.NeedsTmux(t)
	testkit.NeedsRealAgent(t)
	socket := "parley-test-" + randomName(t)
	c, err := ctl.New("", socket, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Short paths: the hook's unix socket must fit in 108 bytes.
	state, err := os.MkdirTemp("", "pxt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(state) })
	root := t.TempDir()
	home := filepath.Join(root, "home")
	cwd := filepath.Join(root, "work")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	// Registered after the folders, so it runs before they are removed: the
	// agents must be gone before their HOME is.
	t.Cleanup(func() { killServer(t, c) })
	srv := claudeapi.Start(t, sc)
	h := &harness{t: t, srv: srv, c: c, cwd: cwd, env: claudeapi.Env(t, srv, home, cwd), claud: testkit.ClaudeBin(t), home: home}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Claude Code's transcripts:\n%s", transcriptsIn(home))
		}
	})
	h.drv = &Driver{
		Logger: failureLog(t),
		Socket: socket, StateDir: state,
		HookCommand: []string{testkit.HookBinary(t)},
		StepTimeout: 5 * time.Second, ReadyTimeout: 60 * time.Second,
	}
	return h
}

func (h *harness) spec(thread string) driver.Spec {
	return driver.Spec{ThreadID: chat.ThreadID(thread), AgentID: "claude-tmux", Command: h.claud, Cwd: h.cwd, Env: h.env,
		Options: map[string]string{}}
}

func (h *harness) start(thread string) (*session, *sink) {
	h.t.Helper()
	k := newSink()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	s, err := h.drv.Start(ctx, h.spec(thread), k)
	if err != nil {
		h.t.Fatalf("Start: %v", err)
	}
	h.t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s.(*session), k
}

func (h *harness) prompt(s *session, id, text string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return s.Prompt(ctx, driver.Prompt{MessageID: id, Text: text})
}

// personTexts are the person's words the model was really sent, oldest first
// (each request carries the whole history, so the newest one says it all).
func (h *harness) personTexts() []string {
	reqs := h.srv.ScenarioRequests()
	if len(reqs) == 0 {
		return nil
	}
	return reqs[len(reqs)-1].UserTexts()
}

func (h *harness) capture(s *session) string {
	out, _ := h.c.Capture(context.Background(), s.name, -200)
	return out
}

// modelGot reports whether any model request carried text as the person's
// words, or in the role "system" message Claude Code 2.1.197 sends for a
// message typed while it worked ("The user sent a new message while you were
// working:\n<text>"), or in a tool result the same words are folded into.
func (h *harness) modelGot(text string) bool {
	for _, r := range h.srv.ScenarioRequests() {
		for _, m := range r.Messages {
			if m.Role != "user" && m.Role != "system" {
				continue
			}
			for _, c := range m.Content {
				if c.Type == "text" && strings.Contains(c.Text, text) {
					return true
				}
				// Typed while a tool ran: folded into that tool's result.
				if c.Type == "tool_result" && strings.Contains(c.ResultText(), "while you were working:\n"+text+"\n") {
					return true
				}
			}
		}
	}
	return false
}

// killServer ends the test's tmux server and waits for its panes' processes.
func killServer(t testing.TB, c *ctl.Client) {
	ctx := context.Background()
	out, _ := c.Run(ctx, "list-panes", "-a", "-F", "#{pane_pid}")
	_ = c.KillServer(ctx)
	for _, f := range strings.Fields(out) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			continue
		}
		if !testkit.Within(10*time.Second, func() bool { return syscall.Kill(pid, 0) != nil }) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Logf("pane process %d outlived its tmux server; killed", pid)
		}
	}
}

// failureLog is a logger whose lines are printed if the test fails (or
// PARLEY_TEST_LOG is set): the driver's own account of what it saw.
func failureLog(t testing.TB) *slog.Logger {
	var mu sync.Mutex
	var buf bytes.Buffer
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("PARLEY_TEST_LOG") != "" {
			mu.Lock()
			defer mu.Unlock()
			t.Logf("the driver's log:\n%s", buf.String())
		}
	})
	return slog.New(slog.NewTextHandler(lockedWriter{&mu, &buf}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// transcriptsIn lists every transcript under a Claude Code home with the
// first 160 bytes of each of its records, for a failure.
func transcriptsIn(home string) string {
	var b strings.Builder
	files, _ := filepath.Glob(filepath.Join(home, ".claude", "projects", "*", "*.jsonl"))
	for _, f := range files {
		st, _ := os.Stat(f)
		fmt.Fprintf(&b, "%s (%d bytes)\n", f, st.Size())
		data, _ := os.ReadFile(f)
		for _, line := range strings.Split(string(data), "\n") {
			if len(line) > 160 {
				line = line[:160] + "…"
			}
			if line != "" {
				fmt.Fprintf(&b, "  %s\n", line)
			}
		}
	}
	return b.String()
}

func scenario() claudeapi.Scenario {
	return claudeapi.Scenario{
		Rules: []claudeapi.Rule{
			{Match: claudeapi.Match{Exact: "hello"}, Reply: claudeapi.Text("Hello from the stand-in.", 3, 5*time.Millisecond)},
			{Match: claudeapi.Match{Exact: "run it"}, Reply: claudeapi.Bash("touch made-by-bash", "Make a file")},
			{Match: claudeapi.Match{ToolResult: "Bash"}, Reply: claudeapi.Text("The command ran.", 1, 0)},
			{Match: claudeapi.Match{Exact: "ask"}, Reply: claudeapi.ToolUse("AskUserQuestion", map[string]any{
				"questions": []map[string]any{{"question": "Which color do you prefer?", "header": "Color", "multiSelect": false,
					"options": []map[string]string{{"label": "Blue", "description": "The color of the sky"}, {"label": "Red", "description": "The color of fire"}}}}})},
			{Match: claudeapi.Match{Exact: "askmulti"}, Reply: claudeapi.ToolUse("AskUserQuestion", map[string]any{
				"questions": []map[string]any{{"question": "Which fruits do you like?", "header": "Fruit", "multiSelect": true,
					"options": []map[string]string{{"label": "Apple", "description": "Crisp"}, {"label": "Banana", "description": "Soft"}, {"label": "Cherry", "description": "Small"}}}}})},
			{Match: claudeapi.Match{Exact: "asktwo"}, Reply: claudeapi.ToolUse("AskUserQuestion", map[string]any{
				"questions": []map[string]any{
					{"question": "Which color do you prefer?", "header": "Color", "multiSelect": false,
						"options": []map[string]string{{"label": "Blue", "description": "The color of the sky"}, {"label": "Red", "description": "The color of fire"}}},
					{"question": "Which size?", "header": "Size", "multiSelect": false,
						"options": []map[string]string{{"label": "Small", "description": "S"}, {"label": "Large", "description": "L"}}}}})},
			{Match: claudeapi.Match{Exact: "slow"}, Reply: claudeapi.Text(strings.Repeat("word ", 400), 200, 50*time.Millisecond)},
			{Match: claudeapi.Match{ToolResult: "AskUserQuestion"}, Reply: claudeapi.Text("Thanks for the answer.", 1, 0)},
		},
		Default: &claudeapi.Reply{Blocks: []claudeapi.Block{{Type: claudeapi.BlockText, Text: "OK."}}},
	}
}

func lastPersonText(h *harness) string {
	got := h.personTexts()
	if len(got) == 0 {
		return ""
	}
	return got[len(got)-1]
}

func waitTurns(t *testing.T, k *sink, n int) {
	t.Helper()
	testkit.Eventually(t, 30*time.Second, func() bool { return k.turnCount() >= n }, "turn %d never ended", n)
}

// startWrapped starts Claude Code one process below the pane's own (see
// envTestWrap), so that it can be stopped, and returns its pid.
func (h *harness) startWrapped(thread string) (*session, *sink, int) {
	h.t.Helper()
	spec := h.spec(thread)
	spec.Command = os.Args[0]
	spec.Env = append(spec.Env, envTestWrap+"="+h.claud)
	k := newSink()
	ctx := context.Background()
	sess, err := h.drv.Start(ctx, spec, k)
	if err != nil {
		h.t.Fatalf("Start: %v", err)
	}
	h.t.Cleanup(func() { _ = sess.Close(ctx) })
	s := sess.(*session)
	info, err := h.c.Pane(ctx, s.pane)
	if err != nil {
		h.t.Fatal(err)
	}
	// The wrapper is a Go program: any of its threads may have forked the
	// agent, and each thread lists only its own children.
	var kids []string
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", info.PID))
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		kids = append(kids, strings.Fields(string(b))...)
	}
	if len(kids) != 1 {
		h.t.Fatalf("the wrapper (pid %d) has children %v, want the one agent", info.PID, kids)
	}
	agent, err := strconv.Atoi(kids[0])
	if err != nil {
		h.t.Fatalf("agent pid from %q: %v", kids, err)
	}
	// The agent is out of the pane's reach (its own process group), so the
	// tmux server going away does not end it: end it here, before the test's
	// folders are removed under its feet.
	h.t.Cleanup(func() {
		_ = syscall.Kill(agent, syscall.SIGKILL)
		_ = syscall.Kill(agent, syscall.SIGCONT)
		if !testkit.Within(10*time.Second, func() bool { return syscall.Kill(agent, 0) != nil }) {
			h.t.Logf("agent %d still there 10 s after SIGKILL", agent)
		}
	})
	return s, k, agent
}

// stopAgent stops the agent with SIGSTOP (nothing renders any more) and
// returns the function that lets it run again (also called at cleanup).
func stopAgent(t testing.TB, agent int) func() {
	t.Helper()
	if err := syscall.Kill(agent, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, func() bool {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", agent))
		f := strings.Fields(string(b))
		return len(f) > 2 && f[2] == "T"
	}, "the agent never stopped")
	cont := sync.OnceFunc(func() { _ = syscall.Kill(agent, syscall.SIGCONT) })
	t.Cleanup(cont)
	return cont
}

func plain(capture string) string { return strings.Join(pane.Read(capture).Full, "\n") }

// adoptPerson starts Claude Code in a tmux session of the person's own (no
// parley hooks), waits for its input box, and adopts it by name.
func (h *harness) adoptPerson(name, thread string) (*session, *sink) {
	h.t.Helper()
	ctx := context.Background()
	if err := h.c.NewSession(ctx, ctl.NewSessionOptions{Name: name, Cwd: h.cwd, Env: h.env, Argv: []string{h.claud, "--model", "claude-sonnet-4-5"}}); err != nil {
		h.t.Fatal(err)
	}
	testkit.Eventually(h.t, 60*time.Second, func() bool {
		out, err := h.c.Capture(ctx, name, 0)
		return err == nil && pane.Read(out).HasBox()
	}, "the person's Claude Code never showed its input box")
	spec := h.spec(thread)
	spec.Options[OptAdopt] = name
	k := newSink()
	sess, err := h.drv.Start(ctx, spec, k)
	if err != nil {
		h.t.Fatalf("Start (adopt): %v", err)
	}
	h.t.Cleanup(func() { _ = sess.Close(context.Background()) })
	return sess.(*session), k
}
