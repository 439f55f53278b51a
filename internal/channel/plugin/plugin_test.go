package plugin_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/channel/plugin"
	"github.com/parleyhq/parley/internal/channel/plugin/bridge"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/daemon"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/scripted"
)

// TestMain lets the test binary play a misbehaving plugin.
func TestMain(m *testing.M) {
	switch os.Getenv("PARLEY_FAKE_PLUGIN") {
	case "bad":
		badPlugin()
		return
	case "bridge":
		bridgePlugin()
		return
	case "silent":
		// Reads everything, answers nothing: the heartbeat must catch it.
		_, _ = bufio.NewReader(os.Stdin).WriteTo(devNull{})
		return
	}
	os.Exit(m.Run())
}

type devNull struct{}

func (devNull) Write(p []byte) (int, error) { return len(p), nil }

// badPlugin writes garbage, calls a method that does not exist, floods (on its
// first run), then behaves: it answers pings, and says in a file what it got back.
func badPlugin() {
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(out, "this is not JSON at all")
	fmt.Fprintln(out, `{"jsonrpc":"2.0","id":1,"method":"no/such_method","params":{}}`)
	fmt.Fprintln(out, `{"jsonrpc":"2.0","method":"_vendor/unknown_notice","params":{}}`)
	// The flood overflows parley's queue and costs the connection (a restart)
	// when parley falls behind: only the first run floods, so a later one
	// surely lives to see its reply and answer pings.
	flooded := filepath.Join(os.Getenv("PARLEY_FAKE_DIR"), "flooded")
	if _, err := os.Stat(flooded); err != nil {
		_ = os.WriteFile(flooded, nil, 0o600)
		for range 20000 {
			fmt.Fprintln(out, `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"nope"}}`)
		}
	}
	out.Flush()
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Error  *struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		switch {
		case string(m.ID) == "1" && m.Error != nil:
			_ = os.WriteFile(filepath.Join(os.Getenv("PARLEY_FAKE_DIR"), "reply"), fmt.Appendf(nil, "%d", m.Error.Code), 0o600)
		case m.Method == "_parley/ping":
			fmt.Fprintf(os.Stdout, `{"jsonrpc":"2.0","id":%s,"result":{}}`+"\n", m.ID)
		}
	}
}

// fileSay is a bridge transport that appends "chat: text" lines to a file.
type fileSay struct{ path string }

func (f fileSay) Say(_ context.Context, chat, text string) error {
	fh, err := os.OpenFile(f.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer fh.Close()
	_, err = fmt.Fprintf(fh, "%s: %s\n", chat, text)
	return err
}

// bridgePlugin is an IM plugin on the real bridge whose platform is files: a
// stranger writes first; once the test creates "next", an allowed user writes.
func bridgePlugin() {
	ctx := context.Background()
	dir := os.Getenv("PARLEY_FAKE_DIR")
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	b, _, err := bridge.Connect(ctx, os.Stdin, os.Stdout, "fake", log)
	if err != nil {
		log.Error("connect", "err", err)
		os.Exit(1)
	}
	b.Use(fileSay{filepath.Join(dir, "said")}, bridge.Format{Limit: 1000, PerSecond: 100})
	if err := b.Reopen(ctx); err != nil {
		log.Error("reopen", "err", err)
	}
	b.Handle(ctx, "dm-mallory", "mallory", "hello")
	for {
		if _, err := os.Stat(filepath.Join(dir, "next")); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.Handle(ctx, "dm-alice", "alice", "say hi-alice")
	<-b.Done()
}

func start(t *testing.T, plugins []config.Plugin) (*daemon.Daemon, *testkit.LockedBuffer) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default(filepath.Join(root, "data"), root)
	cfg.Addr = "127.0.0.1:0"
	cfg.Agents = []config.Agent{{ID: "echo", Transport: config.TransportStream, Command: "scripted"}}
	cfg.Plugins = plugins
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	logs := &testkit.LockedBuffer{}
	d, err := daemon.Start(context.Background(), cfg, daemon.Options{
		Drivers: map[string]driver.Driver{"stream": &scripted.Driver{}},
		Logger:  slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
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
	return d, logs
}

func status(t *testing.T, d *daemon.Daemon, id string) plugin.Status {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+d.Addr()+"/api/plugins", nil)
	req.Header.Set("Authorization", "Bearer "+d.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/plugins: got HTTP %d, want 200", resp.StatusCode)
	}
	var body struct {
		Plugins []plugin.Status `json:"plugins"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	for _, s := range body.Plugins {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("GET /api/plugins: no %q in %+v", id, body.Plugins)
	return plugin.Status{}
}

func TestBadPluginOutputIsLoggedAndSurvived(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	d, logs := start(t, []config.Plugin{{ID: "bad", Command: self,
		Env:       map[string]string{"PARLEY_FAKE_PLUGIN": "bad", "PARLEY_FAKE_DIR": dir},
		Heartbeat: config.Duration{Duration: 200 * time.Millisecond}}})
	testkit.Eventually(t, 20*time.Second, func() bool {
		return strings.Contains(logs.String(), "failed to parse incoming message")
	}, "the non-JSON line was not logged")
	testkit.Eventually(t, 20*time.Second, func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "reply"))
		return string(b) == "-32601"
	}, "the unknown method got no method-not-found reply")
	// After the flood (which may cost it a restart) the plugin answers pings.
	testkit.Eventually(t, 20*time.Second, func() bool {
		s := status(t, d, "bad")
		return s.State == plugin.StateRunning && !s.LastHeartbeat.IsZero()
	}, "the plugin is not running and answering pings: %+v", status(t, d, "bad"))
	// The daemon is fine.
	resp, err := http.Get("http://" + d.Addr() + "/healthz")
	if err != nil {
		t.Fatalf("healthz after the bad plugin: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("healthz: got %d, want 200", resp.StatusCode)
	}
}

func TestSilentPluginIsRestartedByTheWatchdog(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	d, _ := start(t, []config.Plugin{{ID: "silent", Command: self,
		Env:       map[string]string{"PARLEY_FAKE_PLUGIN": "silent"},
		Heartbeat: config.Duration{Duration: 100 * time.Millisecond}}})
	var s plugin.Status
	testkit.Eventually(t, 20*time.Second, func() bool {
		s = status(t, d, "silent")
		return s.Restarts >= 2
	}, "the silent plugin was not restarted twice: %+v", s)
	if !strings.Contains(s.LastError, "stopped answering pings") {
		t.Errorf("last error: got %q, want the heartbeat's", s.LastError)
	}
}

func TestPluginsNeedTheToken(t *testing.T) {
	t.Parallel()
	d, _ := start(t, nil)
	resp, err := http.Get("http://" + d.Addr() + "/api/plugins")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /api/plugins without a token: got %d, want 401", resp.StatusCode)
	}
}

func threadCount(t *testing.T, d *daemon.Daemon) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+d.Addr()+"/api/threads", nil)
	req.Header.Set("Authorization", "Bearer "+d.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Threads []json.RawMessage `json:"threads"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return len(body.Threads)
}

func TestAStrangerLeavesNoThread(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	d, _ := start(t, []config.Plugin{{ID: "fake", Command: self, AllowedUsers: []string{"alice"},
		Env: map[string]string{"PARLEY_FAKE_PLUGIN": "bridge", "PARLEY_FAKE_DIR": dir}}})
	said := func() string { b, _ := os.ReadFile(filepath.Join(dir, "said")); return string(b) }
	testkit.Eventually(t, 30*time.Second, func() bool {
		return strings.Contains(said(), "dm-mallory: "+plugin.Refusal)
	}, "the stranger was not refused; the plugin said %q", said())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if n := threadCount(t, d); n != 0 {
		t.Errorf("threads after a stranger wrote: got %d, want 0", n)
	}
	if id, err := d.Router().ThreadOf(ctx, chat.RouteKey{Channel: "fake", Chat: "dm-mallory"}); err != nil || id != "" {
		t.Errorf("the stranger's chat shows thread %q (%v), want none", id, err)
	}
	// The first prompt that passes the gate makes the chat's thread, and its
	// answer reaches the chat.
	if err := os.WriteFile(filepath.Join(dir, "next"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, func() bool {
		return strings.Contains(said(), "dm-alice: hi-alice")
	}, "the allowed user got no answer; the plugin said %q", said())
	if n := threadCount(t, d); n != 1 {
		t.Errorf("threads after the allowed user wrote: got %d, want 1", n)
	}
	if id, err := d.Router().ThreadOf(ctx, chat.RouteKey{Channel: "fake", Chat: "dm-alice"}); err != nil || id == "" {
		t.Errorf("the allowed user's chat has no thread (%v)", err)
	}
}
