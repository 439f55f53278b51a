// Package scriptd runs a real daemon (real SQLite, real sockets) whose one
// agent ("echo") is the scripted driver, for the tests of what talks to a
// daemon (the Go client, parley chat, parley send, the ACP side). It can be
// stopped and started again on the same address and data, as a restart does.
package scriptd

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/daemon"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/scripted"
)

// Rig is one daemon's config and the daemon running it (nil while stopped).
type Rig struct {
	t testing.TB
	// Work is the one root a thread may work in.
	Work string

	mu  sync.Mutex
	cfg config.Config
	d   *daemon.Daemon
}

// Start starts a daemon; mutate, when set, may change its config first. It
// is shut down when the test ends.
func Start(t testing.TB, mutate func(*config.Config)) *Rig {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(root, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default(filepath.Join(root, "data"), work)
	cfg.Addr = "127.0.0.1:0"
	cfg.Agents = []config.Agent{{ID: "echo", Transport: config.TransportStream, Command: "scripted"}}
	if mutate != nil {
		mutate(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	r := &Rig{t: t, Work: work, cfg: cfg}
	r.Up()
	t.Cleanup(r.Down)
	return r
}

// D is the daemon running now (nil while stopped).
func (r *Rig) D() *daemon.Daemon {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.d
}

// Up starts the daemon again, on the address it had (a restart's second half).
func (r *Rig) Up() {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	d, err := daemon.Start(context.Background(), r.cfg, daemon.Options{Drivers: map[string]driver.Driver{config.TransportStream: &scripted.Driver{}},
		Logger: testkit.FailureLog(r.t)}) // its log, shown when the test fails
	if err != nil {
		r.t.Fatal(err)
	}
	r.d, r.cfg.Addr = d, d.Addr() // the next start listens where clients look
	if r.cfg.Cluster.Listen != "" {
		r.cfg.Cluster.Listen = d.ClusterHub().Addr() // and where its nodes' links look
	}
}

// Config is the daemon's config, as its next start takes it.
func (r *Rig) Config() config.Config {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cfg
}

// Down shuts the daemon down (its sockets closed with 1001), if it runs.
func (r *Rig) Down() {
	r.mu.Lock()
	d := r.d
	r.d = nil
	r.mu.Unlock()
	if d == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.Shutdown(ctx); err != nil {
		r.t.Errorf("shutdown: %v", err)
	}
}

// Restart shuts the daemon down and starts it again.
func (r *Rig) Restart() { r.Down(); r.Up() }

// URL is the daemon's http://host:port, the same across restarts.
func (r *Rig) URL() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return "http://" + r.cfg.Addr
}

// Metric reads one series (as Prometheus prints it, e.g.
// `parley_socket_closed_total{reason="slow"}`) from a daemon's /metrics;
// 0 when it is not there.
func Metric(t testing.TB, server, token, series string) float64 {
	t.Helper()
	req, _ := http.NewRequest("GET", server+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: HTTP %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if ok && name == series {
			v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
			if err != nil {
				t.Fatalf("/metrics %s: %v", series, err)
			}
			return v
		}
	}
	return 0
}
