package cli

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/parleyhq/parley/internal/channel/plugin/irc"
	"github.com/parleyhq/parley/internal/channel/plugin/telegram"
	"github.com/parleyhq/parley/internal/channel/plugin/xmpp"
)

func init() { extraCommands = append(extraCommands, newPluginCommand) }

func newPluginCommand(Build) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plugin",
		Short: "Built-in IM plugins (started by parley serve from [[plugin]] entries)",
		Long: `The built-in IM plugins. parley serve starts them from [[plugin]] entries with
args = ["plugin", "<name>"]; they speak ACP on stdin/stdout with the daemon
(docs/plugin-protocol.md), so running one by hand is only for debugging.`,
	}
	var logLevel string
	irccmd := &cobra.Command{
		Use:   "irc",
		Short: "The IRC plugin",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			// stdout is the ACP stream: logs go to stderr, which the host logs.
			return irc.Run(ctx, c.InOrStdin(), c.OutOrStdout(), newLogger(c.ErrOrStderr(), "text", logLevel))
		},
	}
	xmppcmd := &cobra.Command{
		Use:   "xmpp",
		Short: "The XMPP plugin",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return xmpp.Run(ctx, c.InOrStdin(), c.OutOrStdout(), newLogger(c.ErrOrStderr(), "text", logLevel))
		},
	}
	tgcmd := &cobra.Command{
		Use:   "telegram",
		Short: "The Telegram plugin (tested against a stand-in Bot API only)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return telegram.Run(ctx, c.InOrStdin(), c.OutOrStdout(), newLogger(c.ErrOrStderr(), "text", logLevel))
		},
	}
	for _, sub := range []*cobra.Command{irccmd, xmppcmd, tgcmd} {
		sub.Flags().StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
		cmd.AddCommand(sub)
	}
	return cmd
}
