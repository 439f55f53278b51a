package cli

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"os/user"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/tui"
)

func init() {
	extraCommands = append(extraCommands, newChatCommand, newSendCommand, newThreadsCommand)
}

// remoteFlags say which daemon a client command talks to.
type remoteFlags struct {
	server, token, data, chat string
}

func (f *remoteFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.server, "server", envOr("PARLEY_SERVER", ""), "URL of a parley daemon, e.g. http://host:7433 (env PARLEY_SERVER; default: the local one)")
	fl.StringVar(&f.token, "token", "", "access token for --server (env PARLEY_TOKEN)")
	fl.StringVar(&f.data, "data", envOr("PARLEY_DATA", ""), "data directory of the local daemon (env PARLEY_DATA)")
	fl.StringVar(&f.chat, "chat", envOr("PARLEY_CHAT", ""), "chat id of this terminal's route (env PARLEY_CHAT; default tui-USER@HOST)")
}

// resolve finds the server URL and the token.
func (f *remoteFlags) resolve() (server, token string, err error) {
	token = f.token
	if token == "" {
		token = os.Getenv("PARLEY_TOKEN")
	}
	if f.server != "" {
		if token == "" {
			return "", "", errors.New("--server needs --token (or PARLEY_TOKEN)")
		}
		return f.server, token, nil
	}
	data := f.data
	if data == "" {
		data = config.DefaultDataDir()
	}
	server, local, err := client.Local(data)
	if err != nil {
		return "", "", err
	}
	if token == "" {
		token = local
	}
	return server, token, nil
}

// chatID is this terminal's route: the same person in the same account on the
// same machine comes back to the same conversation.
func (f *remoteFlags) chatID() string {
	if f.chat != "" {
		return f.chat
	}
	name := "user"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	host, _ := os.Hostname()
	id := "tui-" + name + "@" + host
	return strings.Map(func(r rune) rune {
		if r < 0x21 || r == 0x7f {
			return '_'
		}
		return r
	}, id)
}

type chatFlags struct {
	remoteFlags
	agent, thread, cwd, logFile string
	newThread                   bool
	worktree                    bool
}

func newChatCommand(Build) *cobra.Command {
	var f chatFlags
	cmd := &cobra.Command{
		Use:   "chat",
		Short: "Chat with an agent in this terminal",
		Long: `Chat with an agent in this terminal, over the same socket as the dashboard
(channel "tui"): a thread can be open in both at once.

It opens the default agent's current thread; --agent, --thread and --new --cwd
choose otherwise. Keys:

  Enter          send              Alt+Enter / Ctrl+J   new line
  Esc            stop the turn     Ctrl+C twice         quit
  Ctrl+T         switch thread     Ctrl+N               new thread here
  Shift+Tab      next mode         Ctrl+O               expand tool calls
  PgUp / PgDn    scroll            Ctrl+End             back to the newest

A permission or question card takes over the bottom: pick with 1-9 or the
arrows and Enter, tick several with Space, or type your own answer.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.cwd != "" && !f.newThread {
				return errors.New("--cwd goes with --new")
			}
			if f.worktree && !f.newThread {
				return errors.New("--worktree goes with --new")
			}
			server, token, err := f.resolve()
			if err != nil {
				return err
			}
			log := slog.New(slog.DiscardHandler)
			if f.logFile != "" {
				lf, err := os.OpenFile(f.logFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
				if err != nil {
					return fmt.Errorf("log file: %w", err)
				}
				defer lf.Close()
				log = newLogger(lf, "text", "debug")
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM)
			defer stop()
			return tui.Run(ctx, tui.Options{
				Server: server, Token: token, Chat: f.chatID(),
				Agent: f.agent, Thread: chat.ThreadID(f.thread), New: f.newThread, Cwd: f.cwd, Worktree: f.worktree,
				NoColor: tui.NoColorEnv(), Logger: log,
			})
		},
	}
	f.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.agent, "agent", "", "open this agent's newest thread (or start one with it)")
	fl.StringVar(&f.thread, "thread", "", "open this thread (parley threads lists them)")
	fl.BoolVar(&f.newThread, "new", false, "start a new thread with the first message")
	fl.StringVar(&f.cwd, "cwd", "", "working directory of the --new thread (inside a configured root)")
	fl.BoolVar(&f.worktree, "worktree", false, "the --new thread works in a git worktree of its own, on a new branch")
	fl.StringVar(&f.logFile, "log", "", "write a debug log to this file")
	return cmd
}
