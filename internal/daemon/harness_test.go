package daemon_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/daemon"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/scripted"
	"github.com/parleyhq/parley/internal/testkit/webpushsvc"
)

// testEnv is a real daemon (real SQLite, real sockets) over the scripted agent.
type testEnv struct {
	t    testing.TB
	d    *daemon.Daemon
	drv  *scripted.Driver
	root string
	cfg  config.Config
	opt  daemon.Options
}

// startDaemon starts a daemon whose one agent ("echo") is the scripted driver.
// mutate may change the config before it is validated.
func startDaemon(t testing.TB, mutate func(*config.Config)) *testEnv {
	t.Helper()
	drv := &scripted.Driver{}
	e := startWith(t, drv, mutate)
	e.drv = drv
	return e
}

// startWith starts a daemon whose one agent ("echo") runs on drv.
func startWith(t testing.TB, drv driver.Driver, mutate func(*config.Config)) *testEnv {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(root, "data")
	work := filepath.Join(root, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(data, work)
	if mutate != nil {
		mutate(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	// Pushes reach the Web Push stand-in (loopback, its own CA) only through
	// a Net set here, in Go: parley's own refuses loopback.
	e := &testEnv{t: t, root: work, cfg: cfg, opt: daemon.Options{Drivers: map[string]driver.Driver{config.TransportStream: drv},
		PushNet: webpushsvc.Net(), Logger: testkit.FailureLog(t)}}
	e.start()
	t.Cleanup(e.stop)
	return e
}

// start starts the daemon (again, after stop) on its data directory.
func (e *testEnv) start() {
	e.t.Helper()
	d, err := daemon.Start(context.Background(), e.cfg, e.opt)
	if err != nil {
		e.t.Fatal(err)
	}
	e.d = d
}

// stop shuts the daemon down (nothing when it is stopped).
func (e *testEnv) stop() {
	if e.d == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.d.Shutdown(ctx); err != nil {
		e.t.Errorf("shutdown: %v", err)
	}
	e.d = nil
}

func testConfig(data, work string) config.Config {
	cfg := config.Default(data, work)
	cfg.Addr = "127.0.0.1:0"
	cfg.Agents = []config.Agent{{ID: "echo", Transport: config.TransportStream, Command: "scripted"}}
	return cfg
}

func (e *testEnv) url() string { return "http://" + e.d.Addr() }

// dial opens a recording socket on a chat.
func (e *testEnv) dial(chatID string, since int64) *chatsock.Conn {
	e.t.Helper()
	return chatsock.Dial(e.t, e.url(), e.d.Token(), client.Options{Chat: chatID, Since: since})
}

// getJSON calls the REST API with the token.
func (e *testEnv) getJSON(path string, v any) int {
	e.t.Helper()
	req, _ := http.NewRequest("GET", e.url()+path, nil)
	req.Header.Set("Authorization", "Bearer "+e.d.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	if v != nil {
		_ = json.NewDecoder(resp.Body).Decode(v)
	}
	return resp.StatusCode
}
