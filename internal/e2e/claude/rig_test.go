//go:build e2e

// Package claude_test runs the real Claude Code CLI (stream transport) behind a
// real daemon, driven through the chat socket, with the scripted Messages API as
// the only stand-in.
package claude_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/daemon"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/stream"
	"github.com/parleyhq/parley/internal/driver/tmux"
	"github.com/parleyhq/parley/internal/driver/watch"
	"github.com/parleyhq/parley/internal/router"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

// wait bounds one step: Claude Code starts in about a second here.
const wait = 30 * time.Second

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
	testkit.NeedsRealAgent(t)
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
		Drivers: map[string]driver.Driver{config.TransportStream: stream.New(nil),
			// For a person's running session: its tmux pane adopted, or watched.
			config.TransportTmux: tmux.New(nil, filepath.Join(r.cfg.DataDir, "tmux")), router.TransportWatch: &watch.Driver{}},
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
func (r *rig) agentPIDs() []int { return testkit.PIDsWithEnv("HOME="+r.home, "claude") }

// waitTranscript waits until Claude Code's transcript holds every fragment.
// Claude Code 2.1.197 writes its transcript in batches, some time after the
// turn's result: a process stopped or killed right after a turn may not have
// kept it, and a resumed session would not know of it.
func (r *rig) waitTranscript(t *testing.T, fragments ...string) {
	t.Helper()
	testkit.Eventually(t, wait, func() bool {
		files, _ := filepath.Glob(filepath.Join(r.home, ".claude", "projects", "*", "*.jsonl"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			if !slices.ContainsFunc(fragments, func(x string) bool { return !strings.Contains(string(b), x) }) {
				return true
			}
		}
		return false
	}, fmt.Sprintf("Claude Code's transcript never held %q", fragments))
}

func (r *rig) dial(chatID string, since int64) *chatsock.Conn {
	r.t.Helper()
	s := chatsock.Dial(r.t, "http://"+r.d.Addr(), r.d.Token(), client.Options{Chat: chatID, Since: since})
	s.WaitFor(0, wait, chatsock.Type(chat.TypeReplayDone), "replay_done")
	return s
}

func kill(t *testing.T, pids []int) {
	for _, p := range pids {
		if err := syscall.Kill(p, syscall.SIGKILL); err != nil {
			t.Logf("kill %d: %v", p, err)
		}
	}
}
