package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/parleyhq/parley/internal/channel/web"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
)

func init() { extraCommands = append(extraCommands, newNotifyCommand) }

func newNotifyCommand(Build) *cobra.Command {
	var f remoteFlags
	var thread, agent, level string
	cmd := &cobra.Command{
		Use:   "notify (--thread ID | --agent A) [--level L] TEXT",
		Short: "Tell the person something: a notice in a thread, pushed to their devices",
		Long: `Store a notice in a thread's log, shown on every surface (dashboard, parley
chat, IM) and pushed to the devices that turned notices on, as an agent's
notify_person tool does. For scripts, hooks and CI. --thread names the thread;
--agent A picks that agent's thread changed last (archived ones left out) and
prints which. --level is info (the default), done or error. TEXT "-" reads
stdin. Exits 0 once the notice is stored.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (thread == "") == (agent == "") {
				return errors.New("name the thread (--thread ID) or the agent (--agent A), one of the two")
			}
			text := args[0]
			if text == "-" {
				b, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), 64<<10))
				if err != nil {
					return fmt.Errorf("stdin: %w", err)
				}
				text = string(b)
			}
			if strings.TrimSpace(text) == "" {
				return errors.New("nothing to say")
			}
			server, token, err := f.resolve()
			if err != nil {
				return err
			}
			api := client.API{Server: server, Token: token}
			var out struct {
				Thread chat.ThreadID `json:"thread"`
			}
			req := web.NotifyRequest{Thread: chat.ThreadID(thread), Agent: agent, Level: level, Text: text}
			if err := api.Call(cmd.Context(), "POST", "/api/notify", req, &out); err != nil {
				return err
			}
			if agent != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "notified in thread %s (agent %s's thread changed last)\n", out.Thread, agent)
			}
			return nil
		},
	}
	f.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&thread, "thread", "", "the thread to notify in (parley threads lists them)")
	fl.StringVar(&agent, "agent", "", "notify in this agent's thread changed last")
	fl.StringVar(&level, "level", "", "info (default), done or error")
	return cmd
}
