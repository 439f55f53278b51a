package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/parleyhq/parley/internal/rules"
)

func init() {
	extraCommands = append(extraCommands, func(Build) *cobra.Command { return newRulesCommand() })
}

// newRulesCommand is `parley rules`: the config's [[rule]]s, and which of
// them would answer a card.
func newRulesCommand() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "rules",
		Short: "List the approval rules, or test which one would answer a card",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(f)
			if err != nil {
				return err
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			if len(cfg.Rules) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no rules: every card asks a person (add [[rule]] entries to the config)")
			}
			for i, r := range cfg.Rules {
				fmt.Fprintf(cmd.OutOrStdout(), "%d\t%s\n", i+1, r)
			}
			return nil
		},
	}
	cmd.PersistentFlags().StringVar(&f.config, "config", envOr("PARLEY_CONFIG", ""), "config file (env PARLEY_CONFIG)")
	var c rules.Call
	var cwd, files string
	test := &cobra.Command{
		Use:   "test",
		Short: "Say which rule would answer a card, and why",
		Example: `  parley rules test --agent claude --tool Bash --command "go test ./..."
  parley rules test --tool Edit --path internal/x.go`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(f)
			if err != nil {
				return err
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			if c.Tool == "" {
				return fmt.Errorf("--tool is needed (Bash, Edit, an ACP kind such as execute, an MCP tool)")
			}
			if cwd == "" {
				if cwd, err = os.Getwd(); err != nil {
					return err
				}
			}
			if c.Dir, err = filepath.Abs(cwd); err != nil {
				return err
			}
			c.Roots = cfg.Roots
			for _, a := range cfg.Agents {
				if a.ID == c.Agent && len(a.Roots) > 0 {
					c.Roots = a.Roots
				}
			}
			if files != "" {
				c.Paths = strings.Split(files, ",")
			}
			if c.Machine == "" {
				c.Machine = cfg.Cluster.Node
			}
			c.Home, _ = os.UserHomeDir()
			now := time.Now()
			set := append([]rules.Rule(nil), cfg.Rules...)
			for i := range set {
				set[i].Since = now // as a start now would load them
			}
			v := rules.Decide(set, c, now)
			out := cmd.OutOrStdout()
			if v.Rule == 0 {
				fmt.Fprintf(out, "ask: %s\n", v.Reason)
				return nil
			}
			fmt.Fprintf(out, "%s by %s\n", v.Action, v.By())
			if v.Reason != "" {
				fmt.Fprintf(out, "  %s\n", v.Reason)
			}
			return nil
		},
	}
	fl := test.Flags()
	fl.StringVar(&c.Agent, "agent", "", "the agent id")
	fl.StringVar(&c.Machine, "machine", "", "the machine (default this one's node name)")
	fl.StringVar(&c.Tool, "tool", "", "the tool: Bash, Edit, an ACP kind, an MCP tool")
	fl.StringVar(&c.Command, "command", "", "the shell command line the call runs")
	fl.StringVar(&files, "path", "", "the files a file tool touches, comma-separated")
	fl.StringVar(&cwd, "cwd", "", "the thread's directory (default the current one)")
	cmd.AddCommand(test)
	return cmd
}
