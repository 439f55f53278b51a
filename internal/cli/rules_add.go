package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/ruleset"
)

// newRulesAddCommand is `parley rules add`: a rule made through the running
// daemon (which keeps it and answers cards by it), as the dashboard's
// editor makes one. It carries an id, so an add whose answer was lost is
// sent again and kept once. f and machine are `parley rules`' flags.
func newRulesAddCommand(f *serveFlags, machine *string) *cobra.Command {
	var sp ruleset.Spec
	var paths string
	cmd := &cobra.Command{
		Use:   "add --action allow|deny|ask [--agent A] [--tool T] [--command PATTERN] [--path GLOBS] [--for DUR]",
		Short: "Make a rule, after the others; the same add sent again is made once",
		Example: `  parley rules add --action allow --tool Bash --command "go test *"
  parley rules add --action deny --tool Bash --command "git push *" --agent claude
  parley rules add --action allow --tool Edit --path "internal/**" --for 8h
  parley rules add --machine laptop --action allow --tool Bash --command "make check"   # at a hub: laptop's rules`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(*f)
			if err != nil {
				return err
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			if paths != "" {
				sp.Paths = strings.Split(paths, ",")
			}
			// Only through the running daemon: it owns the rules it answers
			// cards by, and a lost answer is never read as "not running".
			api, err := localAPI(cfg.DataDir)
			if err != nil {
				return fmt.Errorf("rules are made through the running parley: %w", err)
			}
			// One id for this add, however often it is sent: kept once.
			if sp.ID == "" {
				sp.ID = chat.NewID("r")
			}
			e, err := sendAdd[ruleset.Entry](cmd.Context(), api, "/api/rules"+onMachine(*machine), sp, sp.ID,
				addKind{what: "rule", list: "parley rules"}, cmd.ErrOrStderr())
			if err != nil {
				return fmt.Errorf("parley at %s: %w", api.Server, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "rule %d\t%s\t(%s)\n", e.N, e.Text, e.ID)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&sp.Action, "action", "", "allow, deny or ask")
	fl.StringVar(&sp.Agent, "agent", "", "the agent it answers for (an id or a glob; default every agent)")
	fl.StringVar(&sp.Tool, "tool", "", "the tool: Bash, Edit, an ACP kind, an MCP tool (a glob; default every tool)")
	fl.StringVar(&sp.Command, "command", "", `a pattern over the command's shell words ("go test *")`)
	fl.StringVar(&paths, "path", "", "globs of the files a file tool touches, comma-separated (relative ones inside the thread's directory)")
	fl.StringVar(&sp.For, "for", "", "how long it holds (30m, 8h; default for ever)")
	fl.StringVar(&sp.ID, "id", "", "the rule's id (default a fresh one): the same add sent again with its id is made once")
	return cmd
}
