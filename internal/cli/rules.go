package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/ruleset"
	"github.com/parleyhq/parley/internal/store/sqlite"
)

func init() {
	extraCommands = append(extraCommands, func(Build) *cobra.Command { return newRulesCommand() })
}

// newRulesCommand is `parley rules`: the config's [[rule]]s and those made in
// the dashboard, and which of them would answer a card. Through the running
// daemon when there is one (its rules as they are now), else read from the
// config and the database. At a cluster's hub, --machine M reads node M's
// rules through the hub's daemon.
func newRulesCommand() *cobra.Command {
	var f serveFlags
	var machine string
	cmd := &cobra.Command{
		Use:   "rules",
		Short: "List the approval rules, add one, or test which one would answer a card",
		Example: `  parley rules
  parley rules --machine laptop     # at a cluster's hub: laptop's own rules`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(f)
			if err != nil {
				return err
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			var list []ruleset.Entry
			err = withRules(cmd.Context(), cfg, machine, func(api rulesAPI) error {
				var out struct {
					Rules []ruleset.Entry `json:"rules"`
				}
				err := api.call(http.MethodGet, "/api/rules"+onMachine(machine), nil, &out)
				list = out.Rules
				return err
			}, func(s *ruleset.Set) error {
				list = s.List()
				return nil
			})
			if err != nil {
				return err
			}
			printRules(cmd.OutOrStdout(), list)
			return nil
		},
	}
	cmd.PersistentFlags().StringVar(&f.config, "config", envOr("PARLEY_CONFIG", ""), "config file (env PARLEY_CONFIG)")
	cmd.PersistentFlags().StringVar(&machine, "machine", "",
		"the machine whose rules (at a cluster's hub, a node's; default this one's). Elsewhere, for test: the machine the call comes from")
	var p ruleset.Probe
	var files string
	test := &cobra.Command{
		Use:   "test",
		Short: "Say which rule would answer a card, and why",
		Example: `  parley rules test --agent claude --tool Bash --command "go test ./..."
  parley rules test --tool Edit --path internal/x.go
  parley rules test --machine laptop --agent claude --tool Bash --command "make check"   # at a hub: laptop's rules`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(f)
			if err != nil {
				return err
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			if p.Tool == "" {
				return fmt.Errorf("--tool is needed (Bash, Edit, an ACP kind such as execute, an MCP tool)")
			}
			// At a hub --machine names whose rules answer; elsewhere only the
			// call's machine, which this machine's rules judge (offline too).
			// Another machine's directories are its own: the current one
			// names nothing there, and its default is its agent's first root.
			whose := ""
			if cfg.Cluster.Listen != "" && machine != cfg.Cluster.Node {
				whose = machine
			}
			other := whose != ""
			switch {
			case other && p.Cwd != "" && !filepath.IsAbs(p.Cwd):
				return fmt.Errorf("--cwd %q: with --machine give the directory's absolute path on that machine", p.Cwd)
			case !other && p.Cwd == "":
				if p.Cwd, err = os.Getwd(); err != nil {
					return err
				}
				fallthrough
			case !other:
				if p.Cwd, err = filepath.Abs(p.Cwd); err != nil {
					return err
				}
			}
			if files != "" {
				p.Paths = strings.Split(files, ",")
			}
			p.Machine = machine
			var a ruleset.Answer
			err = withRules(cmd.Context(), cfg, whose, func(api rulesAPI) error {
				return api.call(http.MethodPost, "/api/rules/test"+onMachine(machine), p, &a)
			}, func(s *ruleset.Set) (err error) {
				a, err = s.Test(p)
				return err
			})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if a.Rule == 0 {
				fmt.Fprintf(out, "ask: %s\n", a.Reason)
				return nil
			}
			fmt.Fprintf(out, "%s by %s\n", a.Action, a.By)
			if a.Reason != "" {
				fmt.Fprintf(out, "  %s\n", a.Reason)
			}
			return nil
		},
	}
	fl := test.Flags()
	fl.StringVar(&p.Agent, "agent", "", "the agent id")
	fl.StringVar(&p.Tool, "tool", "", "the tool: Bash, Edit, an ACP kind, an MCP tool")
	fl.StringVar(&p.Command, "command", "", "the shell command line the call runs")
	fl.StringVar(&files, "path", "", "the files a file tool touches, comma-separated")
	fl.StringVar(&p.Cwd, "cwd", "", "the thread's directory (default the current one)")
	cmd.AddCommand(test, newRulesAddCommand(&f, &machine))
	return cmd
}

// rulesAPI is the running daemon's API.
type rulesAPI struct {
	call func(method, path string, in, out any) error
}

// withRules runs online against the running daemon when there is one, else
// offline against the rules read from the config and the database. Another
// machine's rules (machine, at a hub) are only online: the hub's daemon
// reaches them, and its refusal (the machine away) is the answer.
func withRules(ctx context.Context, cfg config.Config, machine string, online func(rulesAPI) error, offline func(*ruleset.Set) error) error {
	other := machine != "" && machine != cfg.Cluster.Node
	api, err := localAPI(cfg.DataDir)
	if err == nil {
		call := func(method, path string, in, out any) error { return api.Call(ctx, method, path, in, out) }
		err = online(rulesAPI{call: call})
		var refused *client.APIError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &refused) && (other || refused.Status != http.StatusNotFound):
			return fmt.Errorf("parley at %s: %s", api.Server, refused.Message)
		}
		// Not running any more (an addr file left behind), or older: read
		// the rules where they are kept.
	}
	if other {
		return fmt.Errorf("machine %s's rules are read through this machine's running parley (a cluster's hub): %v", machine, err)
	}
	opt := ruleset.Options{Config: cfg.Rules, Node: cfg.Cluster.Node, Roots: func(agent string) []string {
		for _, a := range cfg.Agents {
			if a.ID == agent && len(a.Roots) > 0 {
				return a.Roots
			}
		}
		return cfg.Roots
	}}
	db := filepath.Join(cfg.DataDir, "parley.db")
	if _, err := os.Stat(db); err == nil {
		st, err := sqlite.Open(ctx, db, nil)
		if err != nil {
			return fmt.Errorf("store: %w", err)
		}
		defer st.Close()
		opt.Store = st
	} else {
		opt.Store = noStored{}
	}
	s, err := ruleset.Open(ctx, opt)
	if err != nil {
		return err
	}
	return offline(s)
}

// onMachine is the query naming machine's rules ("" for this machine's).
func onMachine(machine string) string {
	if machine == "" {
		return ""
	}
	return "?machine=" + url.QueryEscape(machine)
}

// printRules lists rules as `parley rules` shows them.
func printRules(out io.Writer, list []ruleset.Entry) {
	if len(list) == 0 {
		fmt.Fprintln(out, "no rules: every card asks a person (add [[rule]] entries to the config, or rules in the dashboard)")
	}
	for _, e := range list {
		from := e.From
		if e.ID != "" {
			from += " " + e.ID
			if e.CreatedBy != "" {
				from += " by " + e.CreatedBy
			}
		}
		line := fmt.Sprintf("%d\t%s\t(%s)", e.N, e.Text, from)
		switch {
		case e.Expired:
			line += "\texpired"
		case e.ExpiresAt != nil:
			line += "\tuntil " + e.ExpiresAt.Local().Format(time.DateTime)
		}
		fmt.Fprintln(out, line)
	}
}
