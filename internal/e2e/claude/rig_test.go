// Package claude_test runs the real Claude Code CLI (stream transport) behind a
// real daemon, driven through the chat socket, with the scripted Messages API as
// the only stand-in.
package claude_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/daemon"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/stream"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

// wait bounds one step: Claude Code starts in about a second here.
const wait = 60 * time.Second

type rig struct {
	t    testing.TB
	d    *daemon.Daemon
	api  *claudeapi.Server
	home string
	work string
	cfg  config.Config
}

func newRig(t testing.TB, sc claudeapi.Scenario, mutate func(*config.Config)) *rig {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home, work := filepath.Join(root, "home"), filepath.Join(root, "work")
	for _, d := range []string{home, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	api := claudeapi.Start(t, sc)
	env := map[string]string{}
	for _, kv := range claudeapi.Env(t, api, home, work) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	cfg := config.Default(filepath.Join(root, "data"), work)
	cfg.Addr = "127.0.0.1:0"
	cfg.Agents = []config.Agent{{ID: "claude", Transport: config.TransportStream, Command: testkit.ClaudeBin(t), Env: env}}
	if mutate != nil {
		mutate(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, api: api, home: home, work: work, cfg: cfg}
	r.start()
	return r
}

func (r *rig) start() {
	d, err := daemon.Start(context.Background(), r.cfg, daemon.Options{
		Drivers: map[string]driver.Driver{config.TransportStream: stream.New(nil)},
	})
	if err != nil {
		r.t.Fatal(err)
	}
	r.d = d
	r.t.Cleanup(r.stop)
}

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

// agentPIDs finds the Claude Code processes of this rig by their HOME.
func (r *rig) agentPIDs() []int {
	want := []byte("HOME=" + r.home + "\x00")
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !strings.Contains(string(env), string(want)) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.Contains(string(cmdline), "claude") {
			pids = append(pids, pid)
		}
	}
	return pids
}

func (r *rig) dial(chatID string, since int64) *sock {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := client.Dial(ctx, "http://"+r.d.Addr(), r.d.Token(), client.Options{Chat: chatID, Since: since})
	if err != nil {
		r.t.Fatal(err)
	}
	s := &sock{t: r.t, c: c, notify: make(chan struct{}, 1)}
	go s.read()
	r.t.Cleanup(func() { c.CloseNow() })
	s.waitFor(0, isType(chat.TypeReplayDone), "replay_done")
	return s
}

// sock keeps every frame a connection receives.
type sock struct {
	t      testing.TB
	c      *client.Conn
	mu     sync.Mutex
	events []client.Event
	err    error
	notify chan struct{}
}

func (s *sock) read() {
	for {
		ev, err := s.c.Next(context.Background())
		s.mu.Lock()
		if err != nil {
			s.err = err
		} else {
			s.events = append(s.events, ev)
		}
		s.mu.Unlock()
		select {
		case s.notify <- struct{}{}:
		default:
		}
		if err != nil {
			return
		}
	}
}

func (s *sock) snapshot() []client.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]client.Event(nil), s.events...)
}

func (s *sock) send(v any) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.c.Send(ctx, v); err != nil {
		s.t.Fatal(err)
	}
}

func (s *sock) waitFor(from int, match func(client.Event) bool, what string) int {
	s.t.Helper()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		for i := from; i < len(s.events); i++ {
			if match(s.events[i]) {
				s.mu.Unlock()
				return i
			}
		}
		err := s.err
		s.mu.Unlock()
		if err != nil {
			s.t.Fatalf("waiting for %s: socket ended: %v\n%s", what, err, summary(s.snapshot()))
		}
		select {
		case <-s.notify:
		case <-deadline.C:
			s.t.Fatalf("waiting for %s: not seen within %v\n%s", what, wait, summary(s.snapshot()))
		}
	}
}

func (s *sock) get(i int) client.Event { return s.snapshot()[i] }

func summary(evs []client.Event) string {
	var b strings.Builder
	for _, e := range evs {
		raw := string(e.Raw)
		if len(raw) > 300 {
			raw = raw[:300] + "…"
		}
		fmt.Fprintf(&b, "  %s\n", raw)
	}
	return b.String()
}

func isType(typ string) func(client.Event) bool {
	return func(e client.Event) bool { return e.Type == typ }
}

func field(e client.Event, name string) any {
	var m map[string]any
	_ = json.Unmarshal(e.Raw, &m)
	return m[name]
}

func delivery(id, state string) func(client.Event) bool {
	return func(e client.Event) bool {
		return e.Type == chat.TypeDelivery && field(e, "message_id") == id && field(e, "state") == state
	}
}

func promptDone(id, reason string) func(client.Event) bool {
	return func(e client.Event) bool {
		return e.Type == chat.TypePromptDone && field(e, "message_id") == id && field(e, "stop_reason") == reason
	}
}

func msg(id, text string) map[string]any {
	return map[string]any{"type": "message", "message_id": id, "text": text}
}

// chunks joins the agent_chunk texts from index from on.
func chunks(evs []client.Event, from int) string {
	var b strings.Builder
	for _, e := range evs[from:] {
		if e.Type == chat.TypeAgentChunk {
			b.WriteString(fmt.Sprint(field(e, "text")))
		}
	}
	return b.String()
}

func kill(t *testing.T, pids []int) {
	for _, p := range pids {
		if err := syscall.Kill(p, syscall.SIGKILL); err != nil {
			t.Logf("kill %d: %v", p, err)
		}
	}
}
