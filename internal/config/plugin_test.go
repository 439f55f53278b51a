package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPluginConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "config.toml")
	body := `
[[plugin]]
id = "irc"
args = ["plugin", "irc"]
allowed_users = ["alice"]
[plugin.config]
server = "127.0.0.1:6667"
channels = ["#agents"]
line_limit = 300
`
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(file, Default(filepath.Join(dir, "data"), dir))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Plugins) != 1 {
		t.Fatalf("plugins: got %d, want 1", len(cfg.Plugins))
	}
	p := cfg.Plugins[0]
	if p.ID != "irc" || strings.Join(p.Args, " ") != "plugin irc" || p.AllowedUsers[0] != "alice" {
		t.Errorf("plugin: got %+v", p)
	}
	if p.Config["server"] != "127.0.0.1:6667" || p.Config["line_limit"] != int64(300) {
		t.Errorf("plugin config section: got %#v", p.Config)
	}
	if p.Heartbeat.Duration != DefaultPluginHeartbeat {
		t.Errorf("heartbeat: got %v, want the default %v", p.Heartbeat.Duration, DefaultPluginHeartbeat)
	}
}

func TestPluginConfigRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		p    Plugin
		want string
	}{
		{"bad id", Plugin{ID: "IRC!", Args: []string{"plugin", "irc"}}, "id must be"},
		{"reserved id", Plugin{ID: "web", Args: []string{"x"}}, "built-in channel"},
		{"no command", Plugin{ID: "irc"}, "needs a command"},
		{"bad env", Plugin{ID: "irc", Command: "x", Env: map[string]string{"A=B": "c"}}, "bad environment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Default(t.TempDir(), t.TempDir())
			cfg.Plugins = []Plugin{tt.p}
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error saying %q", err, tt.want)
			}
		})
	}
	cfg := Default(t.TempDir(), t.TempDir())
	cfg.Plugins = []Plugin{{ID: "a", Command: "x"}, {ID: "a", Command: "y", Heartbeat: Duration{time.Second}}}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "defined twice") {
		t.Errorf("duplicate id: got %v", err)
	}
}
