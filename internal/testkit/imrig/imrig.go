// Package imrig is the rig the IM plugin end-to-end tests share (IRC, XMPP,
// Telegram): the test binary doubling as `parley plugin <name>`, a real daemon
// supervising it, and the real Claude Code (stream) behind the scripted
// Messages API. Each test brings its own IM server and the people on it.
package imrig

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/channel/plugin"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/cli"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/daemon"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/stream"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

// Wait bounds every wait for something a person on IM should see.
const Wait = 60 * time.Second

// heartbeat is how often the host pings the plugin, which it restarts when a
// ping goes unanswered that long. At 1 s a race-built plugin (the test binary)
// on a machine loaded to 30 missed pings while it started, and was restarted
// over and over until the test gave up.
const heartbeat = 5 * time.Second

// mainEnv marks the test binary started by the daemon as its plugin.
const mainEnv = "PARLEY_TEST_MAIN"

// Main is a plugin test package's TestMain: the test binary is `parley plugin
// <name>` when the daemon starts it as the plugin, the tests otherwise.
func Main(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		os.Exit(cli.Main(cli.Build{Version: "test"}, os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// LongAnswer is the scripted answer to "hello": longer than one IM line or
// message, so a plugin has to split or stream it.
var LongAnswer = strings.TrimSpace(strings.Repeat("The scripted model says a long thing, word after word. ", 8))

// Rules are the scripted model's answers every IM test asks for: "hello" (the
// long answer), two permission cards ("make the file" runs `touch
// made-by-bash`, "make another" `touch made-again`) and the follow-up once a
// tool ran ("The command ran.").
func Rules() []claudeapi.Rule {
	return []claudeapi.Rule{
		{Match: claudeapi.Match{Exact: "hello"}, Reply: claudeapi.Text(LongAnswer, 6, 5*time.Millisecond)},
		{Match: claudeapi.Match{Exact: "make the file"}, Reply: claudeapi.Bash("touch made-by-bash", "Make a file")},
		{Match: claudeapi.Match{Exact: "make another"}, Reply: claudeapi.Bash("touch made-again", "Make another file")},
		{Match: claudeapi.Match{ToolResult: "Bash"}, Reply: claudeapi.Text("The command ran.", 1, 0)},
	}
}

// Rig is a daemon with one agent ("claude") and one plugin under test.
type Rig struct {
	t    testing.TB
	id   string
	home string
	// Root is the test's own directory, for the IM server's files.
	Root string
	// Work is the agent's working directory.
	Work string
	// D is the daemon, API the scripted model; both set by Start.
	D   *daemon.Daemon
	API *claudeapi.Server
}

// New makes the rig's directories; the IM server starts in Root before Start.
func New(t testing.TB) *Rig {
	t.Helper()
	testkit.NeedsRealAgent(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := &Rig{t: t, Root: root, home: filepath.Join(root, "home"), Work: filepath.Join(root, "work")}
	for _, d := range []string{r.home, r.Work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// Plugin is the plugin under test, as configured.
type Plugin struct {
	ID           string // also the name after `parley plugin`
	AllowedUsers []string
	Config       map[string]any
	// Logger is the daemon's; nil logs at info level to the test's log.
	Logger *slog.Logger
}

// Start starts the scripted model with rules, then the daemon with the agent
// and the plugin p (the test binary, run through Main). The daemon is shut
// down at the test's end (a cleanup registered before Start runs after that).
func (r *Rig) Start(rules []claudeapi.Rule, p Plugin) {
	t := r.t
	t.Helper()
	r.API = claudeapi.Start(t, claudeapi.Scenario{Rules: rules})
	env := map[string]string{}
	for _, kv := range claudeapi.Env(t, r.API, r.home, r.Work) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default(filepath.Join(r.Root, "data"), r.Work)
	cfg.Addr = "127.0.0.1:0"
	cfg.Agents = []config.Agent{{ID: "claude", Transport: config.TransportStream, Command: testkit.ClaudeBin(t), Env: env}}
	cfg.Plugins = []config.Plugin{{
		ID: p.ID, Command: self, Args: []string{"plugin", p.ID},
		Env:          map[string]string{mainEnv: "1"},
		AllowedUsers: p.AllowedUsers,
		Config:       p.Config,
		Heartbeat:    config.Duration{Duration: heartbeat},
	}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	logger := p.Logger
	if logger == nil {
		logger = Logger(t, "parley")
	}
	d, err := daemon.Start(context.Background(), cfg, daemon.Options{
		Drivers: map[string]driver.Driver{config.TransportStream: stream.New(nil)},
		Logger:  logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	r.D, r.id = d, p.ID
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := d.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
}

// Plugin is the plugin's status as the host reports it.
func (r *Rig) Plugin() plugin.Status {
	for _, s := range r.D.Plugins().Statuses() {
		if s.ID == r.id {
			return s
		}
	}
	r.t.Fatalf("no %s plugin status", r.id)
	return plugin.Status{}
}

// Thread is the thread the plugin's chat chatID is on ("" before it has one).
func (r *Rig) Thread(chatID string) chat.ThreadID {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	id, err := r.D.Router().ThreadOf(ctx, chat.RouteKey{Channel: r.id, Chat: chatID})
	if err != nil {
		r.t.Fatal(err)
	}
	return id
}

// KillPlugin kills the plugin's process and waits for the host to run it again.
func (r *Rig) KillPlugin() {
	r.t.Helper()
	st := r.Plugin()
	if err := syscall.Kill(st.PID, syscall.SIGKILL); err != nil {
		r.t.Fatal(err)
	}
	testkit.Eventually(r.t, Wait, func() bool {
		now := r.Plugin()
		return now.State == plugin.StateRunning && now.PID != st.PID && now.Restarts > st.Restarts
	}, "the plugin was not restarted: %+v", Later(func() any { return r.Plugin() }))
}

// LogWriter writes each write as a line of the test's log, after Name.
type LogWriter struct {
	T    testing.TB
	Name string
}

func (w LogWriter) Write(p []byte) (int, error) {
	w.T.Logf("%s: %s", w.Name, strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Logger logs at info level to the test's log.
func Logger(t testing.TB, name string) *slog.Logger {
	return slog.New(slog.NewTextHandler(LogWriter{t, name}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// Later is a value formatted when a failure message is written, not when it
// is passed: what was seen at the deadline.
type Later func() any

func (l Later) String() string { return fmt.Sprint(l()) }

// Inbox keeps every message a test client got, in order: a test marks where
// it stands, acts, then waits for a message after the mark.
type Inbox[M any] struct {
	mu   sync.Mutex
	seen []M
}

// Keep appends every message from ch until it is closed.
func (in *Inbox[M]) Keep(ch <-chan M) {
	go func() {
		for m := range ch {
			in.mu.Lock()
			in.seen = append(in.seen, m)
			in.mu.Unlock()
		}
	}()
}

// Mark is how many messages were kept so far.
func (in *Inbox[M]) Mark() int { in.mu.Lock(); defer in.mu.Unlock(); return len(in.seen) }

// Since returns the messages kept after mark.
func (in *Inbox[M]) Since(mark int) []M {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]M(nil), in.seen[min(mark, len(in.seen)):]...)
}

// WaitFor waits for a message after mark that ok accepts and returns the mark
// after it; it fails the test with msg and args otherwise.
func (in *Inbox[M]) WaitFor(t testing.TB, mark int, ok func(M) bool, msg string, args ...any) int {
	t.Helper()
	var at int
	testkit.Eventually(t, Wait, func() bool {
		in.mu.Lock()
		defer in.mu.Unlock()
		for i := mark; i < len(in.seen); i++ {
			if ok(in.seen[i]) {
				at = i + 1
				return true
			}
		}
		return false
	}, msg, args...)
	return at
}

// Person is someone on IM, as the checks every plugin passes drive them.
type Person interface {
	// Mark is where the person's conversation stands.
	Mark() int
	// Say writes text to parley.
	Say(text string)
	// WaitSaid waits for parley to say something holding want after mark and
	// returns the mark after it.
	WaitSaid(mark int, want string) int
	// Said returns the texts (lines or messages) parley said after mark.
	Said(mark int) []string
}

// CheckLongAnswer: an allowed user's "hello" reaches the agent, and its long
// answer comes whole, in several texts, none over limit bytes.
func (r *Rig) CheckLongAnswer(t testing.TB, p Person, limit int) {
	t.Helper()
	m := p.Mark()
	p.Say("hello")
	var got []string
	testkit.Eventually(t, Wait, func() bool {
		got = p.Said(m)
		return strings.Join(got, " ") == LongAnswer
	}, "texts %q do not make up the answer %q", Later(func() any { return p.Said(m) }), LongAnswer)
	if len(got) < 2 {
		t.Errorf("got %d text(s), want the %d-byte answer in several", len(got), len(LongAnswer))
	}
	for _, l := range got {
		if len(l) > limit {
			t.Errorf("a text of %d bytes over the limit %d: %q", len(l), limit, l)
		}
	}
}

// CheckRefused: p, a user not allowed, is told so, and the agent is never asked.
func (r *Rig) CheckRefused(t testing.TB, p Person) {
	t.Helper()
	r.CheckNotAsked(t, p, "hello", "not allowed")
}

// CheckNotAsked: p says text, parley answers with words holding reply, and the
// agent is never asked.
func (r *Rig) CheckNotAsked(t testing.TB, p Person, text, reply string) {
	t.Helper()
	before := len(r.API.ScenarioRequests())
	m := p.Mark()
	p.Say(text)
	p.WaitSaid(m, reply)
	if after := len(r.API.ScenarioRequests()); after != before {
		t.Errorf("model requests: got %d after %q, want %d", after, text, before)
	}
}

// CheckNewAndSwitch: /new starts another thread for the chat chatID, /threads
// lists the first, and /switch goes back to it.
func (r *Rig) CheckNewAndSwitch(t testing.TB, p Person, chatID string) {
	t.Helper()
	first := r.Thread(chatID)
	m := p.Mark()
	p.Say("/new")
	m = p.WaitSaid(m, "New thread")
	second := r.Thread(chatID)
	if second == first || second == "" {
		t.Fatalf("after /new: thread %q, want a new one (was %q)", second, first)
	}
	p.Say("/threads")
	m = p.WaitSaid(m, string(first))
	p.Say("/switch " + string(first))
	p.WaitSaid(m, "Switched to thread "+string(first))
	if got := r.Thread(chatID); got != first {
		t.Errorf("after /switch: thread %q, want %q", got, first)
	}
}

// CheckPermissionByReply: a permission card answered by replying 1 lets the
// tool run, and the agent's follow-up comes.
func (r *Rig) CheckPermissionByReply(t testing.TB, p Person) {
	t.Helper()
	m := p.Mark()
	p.Say("make the file")
	m = p.WaitSaid(m, "1. ")
	p.Say("1")
	p.WaitSaid(m, "The command ran.")
	if _, err := os.Stat(filepath.Join(r.Work, "made-by-bash")); err != nil {
		t.Errorf("the tool did not run: %v", err)
	}
}

// CheckCardAfterRestart: the plugin killed with a card open is restarted, the
// card reaches it again, and answering it there lets the tool run.
func (r *Rig) CheckCardAfterRestart(t testing.TB, p Person) {
	t.Helper()
	m := p.Mark()
	p.Say("make another")
	m = p.WaitSaid(m, "1. ")
	r.KillPlugin()
	m = p.WaitSaid(m, "1. ") // the same card, asked again after the restart
	p.Say("1")
	// The restarted plugin is sent again what it may not have shown
	// (at least once), so an earlier "The command ran." can come back:
	// the follow-up that counts is the one after the answer.
	m = p.WaitSaid(m, "Answered: ")
	p.WaitSaid(m, "The command ran.")
	if _, err := os.Stat(filepath.Join(r.Work, "made-again")); err != nil {
		t.Errorf("the tool did not run: %v", err)
	}
}
