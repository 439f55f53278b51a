package cli

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/sessions"
)

func init() { extraCommands = append(extraCommands, newSessionsCommand) }

// sessionsSubcommands are parley sessions' subcommands, added by the files
// that hold them.
var sessionsSubcommands []func() *cobra.Command

func newSessionsCommand(Build) *cobra.Command {
	var rf remoteFlags
	var f sessions.Filter
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List the agent sessions on this machine (on a hub: every machine's)",
		Long: `List the agents' own sessions, newest first: the ones people started in a
terminal (Claude Code, Codex, Gemini CLI, ACP agents that list theirs), inside
the machine's roots. Sessions parley's threads hold are left out; --all lists
them too. RUNNING says where a running one runs: a tmux pane (tmux:SERVER:
session:window.pane) or a plain terminal (pid:N). On a cluster's hub every
machine's are listed (--machine M: one machine's); a machine that is away
shows its last listing, marked stale. --json prints a JSON array of sessions
(id, agent, cwd, title, updated_at, turns, running, where, pid, node).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			server, token, err := rf.resolve()
			if err != nil {
				return err
			}
			l, err := client.API{Server: server, Token: token}.Sessions(cmd.Context(), f)
			if err != nil {
				return err
			}
			for _, m := range l.Machines {
				if m.Stale {
					fmt.Fprintf(cmd.ErrOrStderr(), "machine %s is away: its sessions as listed %s (%s)\n", m.Node, ago(m.ListedAt), m.Error)
				}
			}
			if asJSON {
				return writeJSONList(cmd.OutOrStdout(), l.Sessions)
			}
			return printSessions(cmd.OutOrStdout(), l.Sessions)
		},
	}
	rf.register(cmd)
	cmd.Flags().Lookup("chat").Hidden = true
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&f.All, "all", false, "list the sessions parley's threads hold too")
	cmd.Flags().StringVar(&f.Machine, "machine", "", "list one machine's sessions (a cluster's node name)")
	cmd.Flags().StringVar(&f.Agent, "agent", "", "list one agent's sessions (claude, codex, gemini, …)")
	for _, sub := range sessionsSubcommands {
		cmd.AddCommand(sub())
	}
	return cmd
}

// printSessions prints a table, newest first (as listed).
func printSessions(out io.Writer, list []sessions.Session) error {
	if len(list) == 0 {
		fmt.Fprintln(out, "no agent sessions found inside the roots")
		return nil
	}
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	machines := slices.ContainsFunc(list, func(s sessions.Session) bool { return s.Node != "" })
	if machines {
		fmt.Fprint(tw, "MACHINE\t")
	}
	fmt.Fprintln(tw, "AGENT\tID\tUPDATED\tTURNS\tRUNNING\tCWD\tTITLE")
	for _, s := range list {
		if machines {
			fmt.Fprintf(tw, "%s\t", cmp.Or(s.Node, "(this one)"))
		}
		running := "-"
		if s.Running {
			running = cmp.Or(s.Where, "yes")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", s.Agent, s.ID, ago(s.UpdatedAt), s.Turns, running, s.Cwd, s.Title)
	}
	return tw.Flush()
}
