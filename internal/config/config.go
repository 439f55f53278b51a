// Package config is parley's typed configuration: defaults, the TOML file, the
// agents found on PATH, and validation. Nothing here starts anything.
package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/parleyhq/parley/internal/rules"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/parleyhq/parley/internal/chat"
)

// Transports parley can drive. The list is closed: a config naming anything else is
// refused, so no test-only driver is reachable from a user's file.
const (
	TransportStream = "stream"
	TransportACP    = "acp"
	TransportTmux   = "tmux"
)

var transports = []string{TransportStream, TransportACP, TransportTmux}

// TransportOptions are the option keys each transport reads (the drivers'
// Opt* names), so a misspelt option is an error, not silently ignored.
var TransportOptions = map[string][]string{
	TransportStream: {"allow_bypass"},
	TransportACP:    {"auth_method", "mcp_servers"},
	TransportTmux:   {"adopt", "session", "hooks", "socket"},
}

// Defaults.
const (
	DefaultAddr          = "127.0.0.1:7430"
	DefaultIdleTimeout   = 30 * time.Minute
	DefaultReplayTail    = 500
	DefaultMaxMessage    = 1 << 20
	DefaultQueueDepth    = 64
	DefaultConnBuffer    = 4096
	DefaultRatePerSecond = 20
	DefaultRateBurst     = 40

	DefaultReadTimeout        = 30 * time.Second
	DefaultConnIdleTimeout    = 90 * time.Second
	DefaultMaxUnauthenticated = 64
	DefaultMaxSockets         = 512
	DefaultMaxSessions        = 16
	DefaultThreadsPerMin      = 60
)

// Config is the whole of parley's settings.
type Config struct {
	Addr    string `toml:"addr"`
	DataDir string `toml:"data"`
	// Roots are the directories new threads may work in (symlinks resolved).
	Roots []string `toml:"roots"`
	// AllowedOrigins are browser origins accepted besides the server's own.
	AllowedOrigins []string `toml:"allowed_origins"`
	DefaultAgent   string   `toml:"default_agent"`
	LogFormat      string   `toml:"log_format"` // text or json
	LogLevel       string   `toml:"log_level"`  // debug, info, warn, error
	// TLSCert and TLSKey are PEM files of a person's own certificate: with
	// them parley serves HTTPS (tls.go in daemon). Both or neither.
	TLSCert string `toml:"tls_cert"`
	TLSKey  string `toml:"tls_key"`
	// PublicURL is the address other devices reach this parley at (pairing
	// links, the printed link), e.g. https://parley.example.com:7430.
	PublicURL string `toml:"public_url"`
	// InsecureHTTP lets parley serve plain HTTP on an address other
	// machines reach (--insecure-http). Without it such a start is refused:
	// the token, cookies and conversations would cross the network in clear.
	InsecureHTTP bool `toml:"insecure_http"`

	Limits Limits  `toml:"limits"`
	Agents []Agent `toml:"agent"`
	// Plugins are IM channel processes parley supervises (plugin.go).
	Plugins []Plugin `toml:"plugin"`
	// Cluster links machines (cluster.go); off unless listen or hub is set.
	Cluster Cluster `toml:"cluster"`
	// Tailscale serves the dashboard on the person's tailnet (tailscale.go).
	Tailscale Tailscale `toml:"tailscale"`
	// Rules answer permission cards by the person's own rules, in order
	// (internal/rules): [[rule]] action, agent, machine, tool, command, paths, for.
	Rules []rules.Rule `toml:"rule"`
	// Audit bounds the audit trail (audit.go).
	Audit Audit `toml:"audit"`
	// Git is how threads' repositories are treated (git.go).
	Git Git `toml:"git"`

	// File is the path the config was read from, or "".
	File string `toml:"-"`
	// FileSHA256 is the SHA-256 of the file's bytes, in hex, when File is
	// set: the audit trail records when it changes between starts.
	FileSHA256 string `toml:"-"`
}

// Limits bound what any one client can cost.
type Limits struct {
	MaxMessageBytes int      `toml:"max_message_bytes"`
	QueueDepth      int      `toml:"queue_depth"`
	ConnBuffer      int      `toml:"conn_buffer"`
	ReplayTail      int      `toml:"replay_tail"`
	InputsPerSecond float64  `toml:"inputs_per_second"`
	InputBurst      int      `toml:"input_burst"`
	IdleTimeout     Duration `toml:"idle_timeout"`
	// MaxSessions caps the agent processes running at once, over all threads.
	MaxSessions int `toml:"max_sessions"`
	// ThreadsPerMinute caps how many threads are made a minute, over all channels.
	ThreadsPerMinute int `toml:"threads_per_minute"`
	// RetainEvents is how long the events of threads that are not working are
	// kept; 0 keeps them for ever.
	RetainEvents Duration `toml:"retain_events"`

	ConnLimits // its keys sit in [limits] too
}

// ConnLimits bound the web channel's connections (limits.go gives their ranges).
type ConnLimits struct {
	// ReadTimeout is the most time a request's headers and body may take to arrive.
	ReadTimeout Duration `toml:"read_timeout"`
	// ConnIdleTimeout closes a keep-alive connection idle this long.
	ConnIdleTimeout Duration `toml:"conn_idle_timeout"`
	// MaxUnauthenticated is how many connections that have not shown the token
	// may be open; beyond it the oldest is closed.
	MaxUnauthenticated int `toml:"max_unauthenticated"`
	// MaxSockets is how many sockets (chat, ACP) may be open at once.
	MaxSockets int `toml:"max_sockets"`
}

// Agent is one agent program and the transport that drives it.
type Agent struct {
	ID          string            `toml:"id"`
	Name        string            `toml:"name"`
	Transport   string            `toml:"transport"`
	Command     string            `toml:"command"`
	Args        []string          `toml:"args"`
	Env         map[string]string `toml:"env"`
	Roots       []string          `toml:"roots"`
	IdleTimeout Duration          `toml:"idle_timeout"`
	Model       string            `toml:"model"`
	Mode        string            `toml:"mode"`
	// Options are transport-specific settings (e.g. auth_method for acp).
	Options map[string]string `toml:"options"`
	// Disabled hides a detected agent.
	Disabled bool `toml:"disabled"`
	// Worktree gives each new thread of this agent in a git repository a
	// worktree of its own (as the new intent's worktree: true).
	Worktree bool `toml:"worktree"`
}

// Duration is a time.Duration written as "30m" in TOML; a whole number of days
// may be written "90d".
type Duration struct{ time.Duration }

func (d *Duration) UnmarshalText(b []byte) error {
	s := string(b)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 32)
		if err != nil || n < 0 {
			return fmt.Errorf("duration %q: want a whole number of days (\"90d\") or a Go duration (\"30m\", \"12h\")", s)
		}
		d.Duration = time.Duration(n) * 24 * time.Hour
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %w", s, err)
	}
	d.Duration = v
	return nil
}

func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// Default returns the embedded defaults; dataDir and cwd fill the paths.
func Default(dataDir, cwd string) Config {
	return Config{
		Addr:      DefaultAddr,
		DataDir:   dataDir,
		Roots:     []string{cwd},
		LogFormat: "text",
		LogLevel:  "info",
		Limits: Limits{
			MaxMessageBytes:  DefaultMaxMessage,
			QueueDepth:       DefaultQueueDepth,
			ConnBuffer:       DefaultConnBuffer,
			ReplayTail:       DefaultReplayTail,
			InputsPerSecond:  DefaultRatePerSecond,
			InputBurst:       DefaultRateBurst,
			IdleTimeout:      Duration{DefaultIdleTimeout},
			MaxSessions:      DefaultMaxSessions,
			ThreadsPerMinute: DefaultThreadsPerMin,
			ConnLimits: ConnLimits{
				ReadTimeout:        Duration{DefaultReadTimeout},
				ConnIdleTimeout:    Duration{DefaultConnIdleTimeout},
				MaxUnauthenticated: DefaultMaxUnauthenticated,
				MaxSockets:         DefaultMaxSockets,
			},
		},
		Audit: Audit{Keep: Duration{DefaultAuditKeep}},
		Cluster: Cluster{Heartbeat: Duration{DefaultClusterHeartbeat}, InputWait: Duration{DefaultClusterInputWait},
			InputBytes: DefaultClusterInputBytes, CopyBytes: DefaultClusterCopyBytes, CopyAge: Duration{DefaultClusterCopyAge}},
	}
}

// DefaultDataDir is $XDG_DATA_HOME/parley, else ~/.local/share/parley.
func DefaultDataDir() string {
	if x := os.Getenv("XDG_DATA_HOME"); x != "" {
		return filepath.Join(x, "parley")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".local", "share", "parley")
}

// DefaultConfigFile is $XDG_CONFIG_HOME/parley/config.toml (else ~/.config/…), or ""
// when that file does not exist.
func DefaultConfigFile() string {
	p := ConfigFilePath()
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// ConfigFilePath is where parley looks for its config file, whether or not it exists.
func ConfigFilePath() string {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "parley", "config.toml")
}

// Load reads a TOML file over base. Unknown keys are an error, so a typo is not
// silently ignored.
func Load(path string, base Config) (Config, error) {
	data, err := readFile(path)
	if err != nil {
		return Config{}, err
	}
	return Parse(data, path, base)
}

// MaxFileBytes bounds a config file: a real one is a few kB, and reading a
// device or a runaway file whole (--config /dev/zero) must not exhaust memory.
const MaxFileBytes = 1 << 20

// readFile reads a config file of at most MaxFileBytes.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("config %s: larger than %d bytes: is it the right file?", path, MaxFileBytes)
	}
	return data, nil
}

// Parse reads a config file's text over base (Load without the file); path
// only names the file in errors.
func Parse(data []byte, path string, base Config) (Config, error) {
	cfg := base
	cfg.Agents = nil
	md, err := toml.Decode(string(data), &cfg)
	if err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	if undec := md.Undecoded(); len(undec) > 0 {
		keys := make([]string, len(undec))
		for i, k := range undec {
			keys[i] = k.String()
		}
		return Config{}, fmt.Errorf("config %s: unknown keys: %s", path, strings.Join(keys, ", "))
	}
	cfg.File = path
	sum := sha256.Sum256(data)
	cfg.FileSHA256 = hex.EncodeToString(sum[:])
	// The file's agents override detected ones by id; the rest are kept.
	merged := slices.Clone(base.Agents)
	for _, a := range cfg.Agents {
		if i := slices.IndexFunc(merged, func(m Agent) bool { return m.ID == a.ID }); i >= 0 {
			merged[i] = a
		} else {
			merged = append(merged, a)
		}
	}
	cfg.Agents = merged
	return cfg, nil
}

// acpAgents are the ACP agents Detect finds by their command on PATH, each run
// as docs/agents.md says it was tested.
var acpAgents = []struct {
	bin, id, name string
	args          []string
	mode          string
}{
	// The approval mode that asks before edits and shell commands: cards.
	{bin: "qwen", id: "qwen", name: "Qwen Code", args: []string{"--acp", "--approval-mode", "default"}},
	// Its own default mode ("auto") lets Claude decide permissions: no cards.
	{bin: "claude-agent-acp", id: "claude-acp", name: "Claude (ACP adapter)", mode: "default"},
	// Permissions come from its own config ("permission" in opencode.json):
	// set bash and edit to "ask" for cards.
	{bin: "opencode", id: "opencode", name: "OpenCode", args: []string{"acp"}},
	{bin: "copilot", id: "copilot", name: "GitHub Copilot CLI", args: []string{"--acp"}},
}

// DetectedPrograms are the programs Detect looks for on PATH.
func DetectedPrograms() []string {
	out := []string{"claude", "gemini"}
	for _, d := range acpAgents {
		out = append(out, d.bin)
	}
	return out
}

// Detect returns the agents whose programs are on PATH: claude (stream),
// claude-tmux (tmux), gemini (acp; auth_method "gemini-api-key" only when
// GEMINI_API_KEY is set) and the ACP agents of acpAgents.
func Detect(lookPath func(string) (string, error)) []Agent {
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	var out []Agent
	if p, err := lookPath("claude"); err == nil {
		out = append(out,
			Agent{ID: "claude", Name: "Claude Code", Transport: TransportStream, Command: p},
			Agent{ID: "claude-tmux", Name: "Claude Code (terminal)", Transport: TransportTmux, Command: p},
		)
	}
	if p, err := lookPath("gemini"); err == nil {
		a := Agent{ID: "gemini", Name: "Gemini CLI", Transport: TransportACP, Command: p, Args: []string{"--acp"}}
		// Authenticate with the API key only when there is one: a person
		// logged in with Google (or using Vertex AI) keeps Gemini CLI's own
		// choice from its settings.
		if os.Getenv("GEMINI_API_KEY") != "" {
			a.Options = map[string]string{"auth_method": "gemini-api-key"}
		}
		out = append(out, a)
	}
	for _, d := range acpAgents {
		if p, err := lookPath(d.bin); err == nil {
			out = append(out, Agent{ID: d.id, Name: d.name, Transport: TransportACP, Command: p, Args: slices.Clone(d.args), Mode: d.mode})
		}
	}
	return out
}

var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// Validate checks the config and resolves roots; it returns every problem at once.
func (c *Config) Validate() error {
	var errs []error
	if c.DataDir == "" {
		errs = append(errs, errors.New("data directory is empty"))
	}
	roots, err := resolveRoots(c.Roots)
	if err != nil {
		errs = append(errs, err)
	}
	c.Roots = roots
	for i, r := range c.Rules {
		if err := r.Check(); err != nil {
			errs = append(errs, fmt.Errorf("rule %d: %w", i+1, err))
		}
	}
	if err := checkAddr(c.Addr); err != nil {
		errs = append(errs, err)
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		errs = append(errs, errors.New("tls_cert and tls_key go together: give both (PEM files of your certificate and its key) or neither"))
	}
	if c.PublicURL != "" {
		if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			errs = append(errs, fmt.Errorf("public_url %q: want http(s)://host[:port]", c.PublicURL))
		}
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		errs = append(errs, fmt.Errorf("log_format %q: want text or json", c.LogFormat))
	}
	if !slices.Contains(logLevels, c.LogLevel) {
		errs = append(errs, fmt.Errorf("log_level %q: want one of %s", c.LogLevel, strings.Join(logLevels, ", ")))
	}
	errs = append(errs, c.Limits.check()...)
	errs = append(errs, c.Audit.check()...)
	seen := map[string]bool{}
	var enabled []Agent
	for i := range c.Agents {
		a := &c.Agents[i]
		if !idPattern.MatchString(a.ID) {
			errs = append(errs, fmt.Errorf("agent %q: id must be lowercase letters, digits, '.', '_' or '-'", a.ID))
			continue
		}
		if seen[a.ID] {
			errs = append(errs, fmt.Errorf("agent %q: defined twice", a.ID))
		}
		seen[a.ID] = true
		if !slices.Contains(transports, a.Transport) {
			errs = append(errs, fmt.Errorf("agent %q: transport %q: want one of %s", a.ID, a.Transport, strings.Join(transports, ", ")))
		}
		if a.Command == "" {
			errs = append(errs, fmt.Errorf("agent %q: command is empty", a.ID))
		}
		for k := range a.Options {
			if known, ok := TransportOptions[a.Transport]; ok && !slices.Contains(known, k) {
				errs = append(errs, fmt.Errorf("agent %q: option %q is not one of the %s transport's (%s)", a.ID, k, a.Transport, strings.Join(known, ", ")))
			}
		}
		if a.Name == "" {
			a.Name = a.ID
		}
		if len(a.Roots) > 0 {
			r, err := resolveRoots(a.Roots)
			if err != nil {
				errs = append(errs, fmt.Errorf("agent %q: %w", a.ID, err))
			}
			a.Roots = r
		} else {
			a.Roots = c.Roots
		}
		if a.IdleTimeout.Duration == 0 {
			a.IdleTimeout = c.Limits.IdleTimeout
		} else if err := IdleTimeoutRange.check(fmt.Sprintf("agent %q: idle_timeout", a.ID), a.IdleTimeout.Duration); err != nil {
			errs = append(errs, err)
		}
		for k := range a.Env {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				errs = append(errs, fmt.Errorf("agent %q: bad environment variable name %q", a.ID, k))
			}
		}
		if !a.Disabled {
			enabled = append(enabled, *a)
		}
	}
	c.Agents = enabled
	if err := c.validatePlugins(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, c.Cluster.check()...)
	errs = append(errs, c.Tailscale.check(c.DataDir)...)
	errs = append(errs, c.Git.check()...)
	if c.DefaultAgent == "" && len(c.Agents) > 0 {
		c.DefaultAgent = c.Agents[0].ID
	}
	if c.DefaultAgent != "" && len(c.Agents) > 0 && !seen[c.DefaultAgent] {
		errs = append(errs, fmt.Errorf("default_agent %q is not a configured agent", c.DefaultAgent))
	}
	return errors.Join(errs...)
}

// Agent returns the agent with an id.
func (c *Config) Agent(id string) (Agent, bool) {
	i := slices.IndexFunc(c.Agents, func(a Agent) bool { return a.ID == id })
	if i < 0 {
		return Agent{}, false
	}
	return c.Agents[i], true
}

func resolveRoots(in []string) ([]string, error) {
	var out []string
	var errs []error
	for _, r := range in {
		abs, err := filepath.Abs(r)
		if err == nil {
			abs, err = filepath.EvalSymlinks(abs)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("root %q: %w", r, err))
			continue
		}
		out = append(out, abs)
	}
	return out, errors.Join(errs...)
}

// Confine resolves dir (symlinks included) and returns it when it lies inside one of
// roots; otherwise an error that is a chat.ErrOutsideRoot, in words for the person.
func Confine(dir string, roots []string) (string, error) {
	if dir == "" {
		return "", badDir{errors.New("no working directory given")}
	}
	if !filepath.IsAbs(dir) {
		return "", badDir{fmt.Errorf("working directory %q must be an absolute path", dir)}
	}
	real, err := filepath.EvalSymlinks(filepath.Clean(dir))
	if err != nil {
		return "", badDir{fmt.Errorf("working directory %q: %w", dir, err)}
	}
	st, err := os.Stat(real)
	if err != nil {
		return "", badDir{fmt.Errorf("working directory %q: %w", dir, err)}
	}
	if !st.IsDir() {
		return "", badDir{fmt.Errorf("working directory %q is not a directory", dir)}
	}
	for _, r := range roots {
		rel, err := filepath.Rel(r, real)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return real, nil
		}
	}
	return "", ErrOutsideRoots{Dir: dir, Roots: roots}
}

// ErrOutsideRoots says a directory is outside every allowed root, and how to
// allow it, in one sentence. It is a chat.ErrOutsideRoot.
type ErrOutsideRoots struct {
	Dir   string
	Roots []string
}

func (e ErrOutsideRoots) Error() string {
	return fmt.Sprintf("working directory %q is outside the allowed roots (%s): to allow it, restart parley serve with --root %s (repeatable) or add it to roots in the config file",
		e.Dir, strings.Join(e.Roots, ", "), e.Dir)
}

func (e ErrOutsideRoots) Is(target error) bool { return target == chat.ErrOutsideRoot }

// badDir is a working directory refused for what it is (relative, missing, a
// file), not for where: a chat.ErrOutsideRoot too, so it is refused alike.
type badDir struct{ error }

func (e badDir) Is(target error) bool { return target == chat.ErrOutsideRoot }
func (e badDir) Unwrap() error        { return e.error }
