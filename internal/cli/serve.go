package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/parleyhq/parley/internal/auth"
	"github.com/parleyhq/parley/internal/channel/web"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/daemon"
)

// AddrFile in the data directory holds the address of the running daemon, so
// local clients (parley chat, parley send) find it.
const AddrFile = "addr"

type serveFlags struct {
	addr, data, config, logFormat, logLevel string
	clusterListen, node                     string
	tlsCert, tlsKey                         string
	roots                                   []string
	tailscale, insecureHTTP                 bool
}

func newServeCommand(b Build, p Parts) *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the parley daemon",
		Long: `Run the parley daemon on embedded defaults: SQLite in the data directory,
loopback only, a token made at first start. Agent programs found on PATH
(claude, gemini) become agents; a config file can add or override them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(f)
			if err != nil {
				return err
			}
			return serve(cmd, b, cfg, p)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "addr", envOr("PARLEY_ADDR", ""), "listen address (env PARLEY_ADDR; default "+config.DefaultAddr+")")
	fl.StringVar(&f.data, "data", envOr("PARLEY_DATA", ""), "data directory (env PARLEY_DATA; default $XDG_DATA_HOME/parley)")
	fl.StringVar(&f.config, "config", envOr("PARLEY_CONFIG", ""), "config file (env PARLEY_CONFIG; default $XDG_CONFIG_HOME/parley/config.toml when it exists)")
	fl.StringVar(&f.logFormat, "log-format", "", "log format: text or json")
	fl.StringVar(&f.logLevel, "log-level", "", "log level: debug, info, warn or error")
	fl.StringVar(&f.clusterListen, "cluster-listen", "", "be the hub of several machines: the NATS listener's host:port (config [cluster] listen; docs/multi-machine.md)")
	fl.StringArrayVar(&f.roots, "root", nil, "a directory new threads may work in, repeatable (config roots; default: your home directory)")
	fl.StringVar(&f.tlsCert, "tls-cert", "", "serve HTTPS with this certificate (PEM; config tls_cert; with --tls-key)")
	fl.StringVar(&f.tlsKey, "tls-key", "", "the certificate's private key (PEM; config tls_key)")
	fl.BoolVar(&f.insecureHTTP, "insecure-http", false, "serve plain HTTP on an address other machines reach (config insecure_http; refused without it: the token would cross the network in clear)")
	fl.BoolVar(&f.tailscale, "tailscale", false, "also serve the dashboard over HTTPS on your tailnet, as its own machine (config [tailscale]; README: reach parley from a phone)")
	fl.StringVar(&f.node, "node", "", "this machine's node name in a cluster (config [cluster] node; default: the host name)")
	return cmd
}

// loadConfig layers defaults, detected agents, the file, then flags.
func loadConfig(f serveFlags) (config.Config, error) {
	root, err := defaultRoot()
	if err != nil {
		return config.Config{}, err
	}
	cfg := config.Default(config.DefaultDataDir(), root)
	cfg.Agents = config.Detect(nil)
	file := f.config
	if file == "" {
		file = config.DefaultConfigFile()
	}
	if file != "" {
		if cfg, err = config.Load(file, cfg); err != nil {
			return config.Config{}, err
		}
	}
	if f.addr != "" {
		cfg.Addr = f.addr
	}
	if f.data != "" {
		cfg.DataDir = f.data
	}
	if f.logFormat != "" {
		cfg.LogFormat = f.logFormat
	}
	if f.logLevel != "" {
		cfg.LogLevel = f.logLevel
	}
	if len(f.roots) > 0 {
		cfg.Roots = f.roots
	}
	if f.clusterListen != "" {
		cfg.Cluster.Listen = f.clusterListen
	}
	if f.node != "" {
		cfg.Cluster.Node = f.node
	}
	if f.tlsCert != "" || f.tlsKey != "" {
		cfg.TLSCert, cfg.TLSKey = f.tlsCert, f.tlsKey
	}
	if f.tailscale {
		cfg.Tailscale.Enabled = true
	}
	if f.insecureHTTP {
		cfg.InsecureHTTP = true
	}
	if cfg.DataDir, err = filepath.Abs(cfg.DataDir); err != nil {
		return config.Config{}, err
	}
	if err := cfg.Validate(); err != nil {
		return config.Config{}, fmt.Errorf("config: %w", err)
	}
	return cfg, nil
}

// defaultRoot is where threads may work when neither --root nor the config
// says: the person's home directory, where their projects are. Not the
// directory serve started in: the README's `go run ./cmd/parley serve` starts
// in parley's own checkout, and every agent would have worked there.
func defaultRoot() (string, error) {
	if home, err := os.UserHomeDir(); err == nil {
		if st, err := os.Stat(home); err == nil && st.IsDir() {
			return home, nil
		}
	}
	return os.Getwd()
}

// noAgents is what serve says when no agent program was found or configured.
func noAgents(cfg config.Config) string {
	file := cfg.File
	if file == "" {
		file = config.ConfigFilePath()
	}
	return fmt.Sprintf("no agent found: none of %s is on PATH and %s adds none. Install Claude Code (npm install -g @anthropic-ai/claude-code) "+
		"or Gemini CLI (npm install -g @google/gemini-cli) and restart parley serve, or add any ACP agent there as an [[agent]] "+
		"with transport = \"acp\" and its command (README, \"Configuration\")", strings.Join(config.DetectedPrograms(), ", "), file)
}

func serve(cmd *cobra.Command, b Build, cfg config.Config, p Parts) error {
	log := newLogger(cmd.ErrOrStderr(), cfg.LogFormat, cfg.LogLevel)
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ui, uiHash := dashboard()
	out := cmd.OutOrStdout()
	d, err := daemon.Start(ctx, cfg, daemon.Options{
		Say:         func(line string) { fmt.Fprintln(out, line) },
		Drivers:     realDrivers(log, cfg),
		Version:     web.Version{Version: b.Version, Commit: b.Commit, Built: b.Built, UIHash: uiHash},
		UI:          ui,
		Logger:      log,
		PushNet:     p.PushNet,
		JoinTailnet: p.JoinTailnet,
	})
	if err != nil {
		return err
	}
	addrFile := filepath.Join(cfg.DataDir, AddrFile)
	addr := d.LinkAddr()
	if d.CertPEM() != nil {
		// Local clients dial 127.0.0.1, which the certificate may not name:
		// they pin the certificate the daemon keeps in addr.pem instead
		// (client.Local), rewritten with each renewal.
		addr = d.LocalURL()
		defer os.Remove(filepath.Join(cfg.DataDir, client.AddrCertFile))
	}
	if err := os.WriteFile(addrFile, []byte(addr+"\n"), 0o600); err != nil {
		log.Warn("could not write the address file", "err", err)
	}
	defer os.Remove(addrFile)
	agents := make([]string, 0, len(cfg.Agents))
	for _, a := range cfg.Agents {
		agents = append(agents, a.ID+" ("+a.Transport+")")
	}
	log.Info("parley is running", "addr", d.Addr(), "data", cfg.DataDir, "agents", agents, "config", cfg.File)
	// The one line a person needs, as Jupyter prints it: the link signs the
	// browser in, once, within a few minutes (a code, never the token).
	link, err := d.LoginURL()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "parley %s is running. Open the dashboard (the link signs in once, within %v; `parley login-link` prints a new one):\n    %s\n",
		b.Version, auth.CodeTTL, link)
	if h := d.ClusterHub(); h != nil {
		fmt.Fprintf(out, "This machine is the cluster hub (NATS with TLS on %s). On it, `parley join-token` prints the command that joins another machine.\n", h.Addr())
	}
	if d.Link() != nil {
		fmt.Fprintf(out, "This machine is node %q of the hub at %s (it dials out; the hub may come and go).\n", cfg.Cluster.Node, cfg.Cluster.Hub)
	}
	if cfg.Tailscale.Enabled {
		fmt.Fprintf(out, "Joining your tailnet as %q (state in %s); its https:// address follows once it is on.\n", cfg.Tailscale.Hostname, cfg.Tailscale.StateDir)
	}
	for _, w := range d.Warnings() {
		fmt.Fprintf(out, "warning: %s\n", w)
	}
	if len(cfg.Agents) == 0 && d.ClusterHub() == nil {
		// A hub's agents may all be other machines'; anywhere else, no agent
		// means no thread can start, and the dashboard says the same.
		// Printed once, under the link (not logged too: in a terminal both
		// show, and stdout reaches a service's journal as well).
		fmt.Fprintf(out, "warning: %s\n", noAgents(cfg))
	}
	select {
	case <-ctx.Done():
	case <-waitChan(d):
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return d.Shutdown(sctx)
}

func waitChan(d *daemon.Daemon) <-chan error {
	c := make(chan error, 1)
	go func() { c <- d.Wait() }()
	return c
}
