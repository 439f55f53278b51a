package config

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestTailscaleDefaultsAndChecks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := Default(filepath.Join(dir, "data"), dir)
	cfg, err := Parse([]byte("[tailscale]\nenabled = true"), "test.toml", base)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Tailscale.Hostname != "parley" || cfg.Tailscale.StateDir != filepath.Join(dir, "data", "tailscale") {
		t.Errorf("defaults: hostname %q, state_dir %q", cfg.Tailscale.Hostname, cfg.Tailscale.StateDir)
	}
	for _, tc := range []struct{ text, want string }{
		{"[tailscale]\nhostname = \"My.Parley\"", `tailscale.hostname "My.Parley": want 1 to 63`},
		{"[tailscale]\nhostname = \"-x\"", `tailscale.hostname "-x"`},
		// The node learns the coordination server's key from this URL: plain
		// http across a network would let anyone on the path stand in for it.
		{"[tailscale]\ncontrol_url = \"http://headscale.lan:8080\"", "plain http only to a loopback host"},
		{"[tailscale]\ncontrol_url = \"headscale.lan\"", "want an https:// URL"},
		{"[tailscale]\nauthkey = \"k\"", "unknown keys: tailscale.authkey"},
	} {
		cfg, err := Parse([]byte(tc.text), "test.toml", base)
		if err == nil {
			err = cfg.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error with %q", tc.text, err, tc.want)
		}
	}
	for _, ok := range []string{"https://headscale.example", "http://127.0.0.1:8080", "http://[::1]:1", "http://localhost:9"} {
		cfg, err := Parse([]byte("[tailscale]\ncontrol_url = \""+ok+"\""), "test.toml", base)
		if err == nil {
			err = cfg.Validate()
		}
		if err != nil {
			t.Errorf("control_url %q: %v", ok, err)
		}
	}
}
