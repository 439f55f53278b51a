package cli

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/parleyhq/parley/internal/auth"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/config"
)

func init() {
	extraCommands = append(extraCommands, newJoinTokenCommand, newJoinCommand, newNodesCommand)
}

// configFlags are the flags of commands that read the config without serving.
func configFlags(cmd *cobra.Command, f *serveFlags) {
	fl := cmd.Flags()
	fl.StringVar(&f.data, "data", envOr("PARLEY_DATA", ""), "data directory (env PARLEY_DATA)")
	fl.StringVar(&f.config, "config", envOr("PARLEY_CONFIG", ""), "config file (env PARLEY_CONFIG; default $XDG_CONFIG_HOME/parley/config.toml)")
}

func newJoinTokenCommand(b Build) *cobra.Command {
	var f serveFlags
	var name, hub string
	var ttl time.Duration
	cmd := &cobra.Command{
		Use:   "join-token",
		Short: "On the hub: print a one-time command that joins another machine",
		Long: `Print one line, "parley join <token>", to run on the machine that should join.
The token works once, expires after --ttl, carries this hub's address and its
CA's fingerprint, and is signed: an altered token is refused. Making one
needs only this machine's data directory; the hub must run when it is used.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if ttl < cluster.MinTokenTTL || ttl > cluster.MaxTokenTTL {
				return fmt.Errorf("--ttl %v is out of range: want %v to %v", ttl, cluster.MinTokenTTL, cluster.MaxTokenTTL)
			}
			cfg, err := loadConfig(f)
			if err != nil {
				return err
			}
			if name != "" && name == cfg.Cluster.Node {
				return fmt.Errorf("--name %s is this hub's own machine name; pick another for the joining machine", name)
			}
			if hub == "" {
				if hub, err = hubAddress(cfg); err != nil {
					return err
				}
			}
			exp := time.Now().Add(ttl)
			tok, err := cluster.IssueToken(cfg.DataDir, hub, name, exp)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "Run this on the machine to join (once, before %s; it dials %s):\n", exp.Local().Format("15:04"), hub)
			fmt.Fprintf(cmd.OutOrStdout(), "parley join %s\n", tok)
			return nil
		},
	}
	configFlags(cmd, &f)
	cmd.Flags().StringVar(&name, "name", "", "the only node name the token may join as")
	cmd.Flags().DurationVar(&ttl, "ttl", cluster.DefaultTokenTTL, "how long the token works")
	cmd.Flags().StringVar(&hub, "hub", "", "the hub address the node dials (default [cluster] advertise, else the listener)")
	return cmd
}

// hubAddress is the address a joining node dials: [cluster] advertise, else
// the hub's listener (as the running hub bound it) when its host is one
// other machines can dial.
func hubAddress(cfg config.Config) (string, error) {
	if cfg.Cluster.Advertise != "" {
		return cfg.Cluster.Advertise, nil
	}
	addr := cluster.ListenAddr(cfg.DataDir)
	if addr == "" {
		addr = cfg.Cluster.Listen
	}
	if addr == "" {
		return "", errors.New("this machine is not a hub: run `parley serve --cluster-listen HOST:PORT` (or set [cluster] listen) first")
	}
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || host == "" || ip != nil && ip.IsUnspecified() {
		return "", fmt.Errorf("the hub listens on %q, which does not say which address other machines dial: set [cluster] advertise or pass --hub HOST:PORT", addr)
	}
	return addr, nil
}

func newJoinCommand(b Build) *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "join TOKEN",
		Short: "Join this machine to a hub (the token comes from `parley join-token` there)",
		Long: `Make this machine's key (an nkey; its secret stays in the data directory,
mode 0600), register its public half with the hub over TLS pinned to the
CA the token names, and write [cluster] hub and node into the config file.
From then on, ` + "`parley serve`" + ` here dials out to the hub.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			file := f.config
			if file == "" {
				file = defaultConfigPath()
			}
			f.config = ""
			if _, err := os.Stat(file); err == nil {
				f.config = file
			}
			cfg, err := loadConfig(f)
			if err != nil {
				return err
			}
			claims, _, _, err := cluster.ParseToken(args[0])
			if err != nil {
				return err
			}
			// Joining the same hub again is how a revoked node comes back.
			if cfg.Cluster.Hub != "" && cfg.Cluster.Hub != claims.Hub {
				return fmt.Errorf("this machine already joins the hub at %s (config %s); remove its [cluster] hub to join %s", cfg.Cluster.Hub, file, claims.Hub)
			}
			if cfg.Cluster.Listen != "" {
				return fmt.Errorf("this machine is a hub ([cluster] listen in %s); a hub does not join another", file)
			}
			if warning, err := auth.SecureDir(cfg.DataDir); err != nil {
				return err
			} else if warning != "" {
				fmt.Fprintln(cmd.ErrOrStderr(), "parley: "+warning)
			}
			node := f.node
			if node == "" && cfg.File != "" && fileNamesNode(cfg.File) {
				node = cfg.Cluster.Node
			}
			if node == "" && claims.Node == "" {
				node = cfg.Cluster.Node // the host name
			}
			c, err := cluster.Join(cmd.Context(), cfg.DataDir, args[0], node, b.Version)
			if err != nil {
				return err
			}
			if err := config.WriteClusterNode(file, c.Hub, c.Node); err != nil {
				return fmt.Errorf("joined as %q, but %w; add [cluster] hub = %q and node = %q by hand", c.Node, err, c.Hub, c.Node)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Joined the hub at %s as node %q (in %s). Start `parley serve` here, or restart it if it runs.\n", c.Hub, c.Node, file)
			return nil
		},
	}
	configFlags(cmd, &f)
	cmd.Flags().StringVar(&f.node, "node", "", "this machine's node name (default [cluster] node, else the token's, else the host name)")
	return cmd
}

// fileNamesNode says whether a config file sets [cluster] node itself (the
// default from the host name does not count against a token's name).
func fileNamesNode(path string) bool {
	cfg, err := config.Load(path, config.Config{})
	return err == nil && cfg.Cluster.Node != ""
}

// defaultConfigPath is where the config file is, or would be made.
func defaultConfigPath() string {
	if p := config.DefaultConfigFile(); p != "" {
		return p
	}
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "parley", "config.toml")
}

func newNodesCommand(Build) *cobra.Command {
	var f serveFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "nodes",
		Short: "On the hub: list the joined machines",
		Long: `List the machines joined to this hub: name, online (since when) or offline
(last seen), agents, threads and version. The hub must be running.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			adm, err := dialAdmin(f)
			if err != nil {
				return err
			}
			defer adm.Close()
			nodes, err := adm.Nodes(cmd.Context())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSONList(out, nodes)
			}
			if len(nodes) == 0 {
				fmt.Fprintln(out, "no nodes yet: `parley join-token` prints the command that joins one")
				return nil
			}
			tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSTATE\tLAST SEEN\tAGENTS\tTHREADS\tVERSION")
			for _, n := range nodes {
				state := "offline"
				if n.Online {
					state = "online"
				}
				if !n.Since.IsZero() {
					state += " since " + n.Since.Local().Format("2006-01-02 15:04:05")
				} else if !n.Online {
					state = "never connected"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", n.Name, state, ago(n.LastSeen), strings.Join(n.Agents, ","), n.Threads, dash(n.Version))
			}
			return tw.Flush()
		},
	}
	configFlags(cmd, &f)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.AddCommand(newRevokeCommand())
	return cmd
}

func newRevokeCommand() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "revoke NAME",
		Short: "Cut a node off at once: its key is removed and its connections closed",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			adm, err := dialAdmin(f)
			if err != nil {
				return err
			}
			defer adm.Close()
			if err := adm.Revoke(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Node %q is revoked: its key no longer connects, and its connections are closed. It may join again with a new token.\n", args[0])
			return nil
		},
	}
	configFlags(cmd, &f)
	return cmd
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// dialAdmin connects to the hub of the configuration f names, as its admin.
func dialAdmin(f serveFlags) (*cluster.Admin, error) {
	cfg, err := loadConfig(f)
	if err != nil {
		return nil, err
	}
	return cluster.DialAdmin(cfg.DataDir)
}
