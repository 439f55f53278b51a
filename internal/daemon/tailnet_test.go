package daemon_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/daemon"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/tailnet"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/scripted"
)

// The daemon reaches the tailnet only through Options.JoinTailnet (the parley
// binary's is tsnode.Join, tested with a real tsnet node in its package).

func tailscaleConfig(t *testing.T) config.Config {
	t.Helper()
	root := t.TempDir()
	cfg := testConfig(filepath.Join(root, "data"), root)
	cfg.Tailscale = config.Tailscale{Enabled: true, Hostname: "my-parley"}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// A program built without the tailnet says so rather than serving only locally.
func TestTailscaleWithoutATailnetIsRefused(t *testing.T) {
	t.Parallel()
	_, err := daemon.Start(context.Background(), tailscaleConfig(t), daemon.Options{
		Drivers: map[string]driver.Driver{config.TransportStream: &scripted.Driver{}}, Logger: testkit.FailureLog(t)})
	if err == nil || !strings.Contains(err.Error(), "built without the tailnet") {
		t.Fatalf("start with [tailscale] and no JoinTailnet: err %v, want it refused", err)
	}
}

type fakeNode struct{ closed bool }

func (n *fakeNode) URL() string  { return "https://my-parley.example.ts.net" }
func (n *fakeNode) Close() error { n.closed = true; return nil }

// [tailscale] joins with the configured name, state and the daemon's own
// server, and shutdown leaves the tailnet.
func TestTailscaleJoinsWithTheDaemonsServerAndLeavesAtShutdown(t *testing.T) {
	t.Parallel()
	cfg := tailscaleConfig(t)
	node := &fakeNode{}
	var got tailnet.Options
	d, err := daemon.Start(context.Background(), cfg, daemon.Options{
		Drivers: map[string]driver.Driver{config.TransportStream: &scripted.Driver{}}, Logger: testkit.FailureLog(t),
		JoinTailnet: func(o tailnet.Options) (tailnet.Node, error) { got = o; return node, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if got.Hostname != "my-parley" || got.StateDir != cfg.Tailscale.StateDir || got.Server == nil {
		t.Errorf("joined with hostname %q, state dir %q (want %q), server %v", got.Hostname, got.StateDir, cfg.Tailscale.StateDir, got.Server)
	}
	if d.Tailnet() != node {
		t.Errorf("Tailnet() = %v, want the joined node", d.Tailnet())
	}
	if err := d.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !node.closed {
		t.Error("shutdown did not close the tailnet node")
	}
}
