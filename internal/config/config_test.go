package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestLoadLayersTheFileOverDetectedAgents(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := Default(filepath.Join(dir, "data"), dir)
	base.Agents = Detect(func(name string) (string, error) {
		if name == "claude" {
			return "/usr/bin/claude", nil
		}
		return "", errors.New("not found")
	})
	file := filepath.Join(dir, "config.toml")
	os.WriteFile(file, []byte(`
default_agent = "claude"
[limits]
queue_depth = 8
idle_timeout = "5m"
[[agent]]
id = "claude"
transport = "stream"
command = "/opt/claude"
env = { FOO = "bar" }
[[agent]]
id = "gem"
transport = "acp"
command = "gemini"
args = ["--acp"]
`), 0o600)
	cfg, err := Load(file, base)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ids := []string{}
	for _, a := range cfg.Agents {
		ids = append(ids, a.ID)
	}
	if got := strings.Join(ids, ","); got != "claude,claude-tmux,gem" {
		t.Fatalf("agents: got %s, want claude,claude-tmux,gem", got)
	}
	c, _ := cfg.Agent("claude")
	if c.Command != "/opt/claude" || c.Env["FOO"] != "bar" {
		t.Fatalf("claude not overridden: %+v", c)
	}
	if c.IdleTimeout.Duration != 5*time.Minute || cfg.Limits.QueueDepth != 8 {
		t.Fatalf("limits not read: %+v / %v", cfg.Limits, c.IdleTimeout)
	}
	if g, _ := cfg.Agent("gem"); len(g.Roots) != 1 {
		t.Fatalf("gem roots: %v, want the global root", g.Roots)
	}
}

func TestDetectGemini(t *testing.T) {
	onPath := func(name string) (string, error) {
		if name == "gemini" {
			return "/usr/bin/gemini", nil
		}
		return "", errors.New("not found")
	}
	tests := []struct {
		name     string
		key      string // GEMINI_API_KEY; empty: unset
		wantAuth string
	}{
		{name: "api key in the environment", key: "AIza-test", wantAuth: "gemini-api-key"},
		// Logged in with Google (or Vertex AI): Gemini CLI's own settings choose.
		{name: "no api key", key: "", wantAuth: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("GEMINI_API_KEY", tt.key)
			if tt.key == "" {
				os.Unsetenv("GEMINI_API_KEY")
			}
			agents := Detect(onPath)
			if len(agents) != 1 {
				t.Fatalf("agents: got %+v want only gemini", agents)
			}
			a := agents[0]
			if a.ID != "gemini" || a.Transport != TransportACP || a.Command != "/usr/bin/gemini" || strings.Join(a.Args, " ") != "--acp" {
				t.Errorf("gemini: got %+v want acp, /usr/bin/gemini --acp", a)
			}
			got, set := a.Options["auth_method"]
			if got != tt.wantAuth || set != (tt.wantAuth != "") {
				t.Errorf("auth_method: got %q (set %v) want %q", got, set, tt.wantAuth)
			}
		})
	}
	if got := Detect(func(string) (string, error) { return "", errors.New("not found") }); len(got) != 0 {
		t.Errorf("nothing on PATH: got %+v want no agents", got)
	}
}

func TestLoadRefusesUnknownKeysAndBadValues(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cases := map[string]string{
		"unknown key":      "adress = \"x\"",
		"bad duration":     "[limits]\nidle_timeout = \"soon\"",
		"not toml":         "[[agent]\n",
		"wrong value type": "roots = 5",
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".toml")
			os.WriteFile(file, []byte(body), 0o600)
			if _, err := Load(file, Default(dir, dir)); err == nil {
				t.Fatalf("loaded %q without an error", body)
			}
		})
	}
}

func TestValidateSaysEveryProblem(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := Default(dir, dir)
	cfg.Agents = []Agent{
		{ID: "Bad Id", Transport: "stream", Command: "x"},
		{ID: "ok", Transport: "scripted", Command: "x"},
		{ID: "ok", Transport: "acp", Command: ""},
		{ID: "env", Transport: "acp", Command: "x", Env: map[string]string{"A=B": "1"}},
		{ID: "typo", Transport: "tmux", Command: "x", Options: map[string]string{"adpot": "work"}},
		{ID: "known", Transport: "tmux", Command: "x", Options: map[string]string{"adopt": "work", "socket": "default"}},
	}
	cfg.DefaultAgent = "nobody"
	err := cfg.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	if strings.Contains(err.Error(), `"known"`) {
		t.Errorf("error %q refuses the known tmux options", err)
	}
	for _, want := range []string{`"Bad Id"`, `transport "scripted"`, "defined twice", "command is empty", "bad environment variable", `default_agent "nobody"`,
		`agent "typo": option "adpot" is not one of the tmux transport's`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %s", err, want)
		}
	}
}

func TestConfine(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	root, _ = filepath.EvalSymlinks(root)
	outside := t.TempDir()
	os.Mkdir(filepath.Join(root, "in"), 0o755)
	os.Symlink(outside, filepath.Join(root, "out"))
	os.Symlink(filepath.Join(root, "in"), filepath.Join(outside, "back"))
	os.WriteFile(filepath.Join(root, "file"), nil, 0o600)
	cases := []struct {
		dir string
		ok  bool
	}{
		{root, true},
		{filepath.Join(root, "in"), true},
		{filepath.Join(root, "in", "..", "in"), true},
		{filepath.Join(root, ".."), false},
		{filepath.Join(root, "out"), false},
		{filepath.Join(outside, "back"), true}, // resolves into the root
		{filepath.Join(root, "file"), false},
		{filepath.Join(root, "missing"), false},
		{"relative", false},
		{"", false},
		{root + "-sibling", false},
	}
	os.Mkdir(root+"-sibling", 0o755)
	for _, c := range cases {
		_, err := Confine(c.dir, []string{root})
		if (err == nil) != c.ok {
			t.Errorf("Confine(%q): err %v, want ok=%v", c.dir, err, c.ok)
		}
	}
}

func TestDetectACPAgents(t *testing.T) {
	t.Parallel()
	onPath := func(name string) (string, error) {
		if name == "qwen" || name == "claude-agent-acp" || name == "opencode" || name == "copilot" {
			return "/usr/bin/" + name, nil
		}
		return "", errors.New("not found")
	}
	got := map[string]Agent{}
	for _, a := range Detect(onPath) {
		got[a.ID] = a
	}
	want := map[string]Agent{
		"qwen":       {ID: "qwen", Name: "Qwen Code", Transport: TransportACP, Command: "/usr/bin/qwen", Args: []string{"--acp", "--approval-mode", "default"}},
		"claude-acp": {ID: "claude-acp", Name: "Claude (ACP adapter)", Transport: TransportACP, Command: "/usr/bin/claude-agent-acp", Mode: "default"},
		"opencode":   {ID: "opencode", Name: "OpenCode", Transport: TransportACP, Command: "/usr/bin/opencode", Args: []string{"acp"}},
		"copilot":    {ID: "copilot", Name: "GitHub Copilot CLI", Transport: TransportACP, Command: "/usr/bin/copilot", Args: []string{"--acp"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("detected %+v, want %+v", got, want)
	}
}

// A config file is read up to MaxFileBytes: a device or a runaway file is
// refused with words, not read until memory runs out.
func TestLoadBoundsTheFile(t *testing.T) {
	t.Parallel()
	if _, err := Load("/dev/zero", Config{}); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("Load(/dev/zero) = %v, want a size error", err)
	}
	big := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(big, []byte("# "+strings.Repeat("x", MaxFileBytes)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big, Config{}); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("Load(a file over the bound) = %v, want a size error", err)
	}
	if err := WriteClusterNode("/dev/zero", "hub:7431", "b"); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("WriteClusterNode(/dev/zero) = %v, want a size error", err)
	}
}
