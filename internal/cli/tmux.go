package cli

import (
	"os"
	"slices"

	"github.com/spf13/cobra"

	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/driver/tmux"
	"github.com/parleyhq/parley/internal/driver/tmux/hook"
)

func init() {
	extraCommands = append(extraCommands, newHookCommand, newDebugCommand)
}

// newHookCommand is what Claude Code runs for each hook event of a tmux session
// (parley registers it through a per-session --settings file, never the person's
// own settings). It writes the event to the session's spool before anything else.
func newHookCommand(Build) *cobra.Command {
	return &cobra.Command{
		Use:    "hook",
		Short:  "Receive one Claude Code hook event on stdin (run by Claude Code, not by people)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return hook.Run(cmd.Context(), cmd.InOrStdin(), os.Getenv)
		},
	}
}

// tmuxSockets are the tmux servers of the config's tmux agents, each once, in
// order, and parley's own last.
func tmuxSockets(cfg config.Config) []string {
	var out []string
	for _, a := range cfg.Agents {
		if a.Transport != config.TransportTmux {
			continue
		}
		s := a.Options[tmux.OptSocket]
		if s == "" {
			s = tmux.DefaultSocket
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if !slices.Contains(out, tmux.DefaultSocket) {
		out = append(out, tmux.DefaultSocket)
	}
	return out
}

func newDebugCommand(Build) *cobra.Command {
	debug := &cobra.Command{Use: "debug", Short: "Look inside a live session"}
	var socket, configFile string
	pane := &cobra.Command{
		Use:   "pane <thread id | tmux session>",
		Short: "Run the tmux driver's readers on a live pane and print what they see",
		Long: `Runs the real parsers on the live pane of parley's tmux server (tmux -L parley,
or the server --socket names) and prints what they see: the input box, text
staged in it, a live menu (or none, and why), the last speaker. The raw capture
is saved beside it. The first command to run when a message "said sent but
nothing happened".`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("socket") {
				return tmux.Debug(cmd.Context(), cmd.OutOrStdout(), socket, args[0])
			}
			// The agents' own servers, as the config names them (an agent's
			// options.socket), then parley's.
			cfg, err := loadConfig(serveFlags{config: configFile})
			if err != nil {
				return err
			}
			return tmux.DebugAny(cmd.Context(), cmd.OutOrStdout(), tmuxSockets(cfg), args[0])
		},
	}
	pane.Flags().StringVar(&socket, "socket", tmux.DefaultSocket, `the tmux server (tmux -L name); "default" is your own (default: each tmux agent's own from the config, then parley's)`)
	pane.Flags().StringVar(&configFile, "config", envOr("PARLEY_CONFIG", ""), "config file whose tmux agents' sockets are searched (env PARLEY_CONFIG)")
	debug.AddCommand(pane)
	return debug
}
