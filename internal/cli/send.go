package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/wire"
)

// Exit statuses of `parley send`: how the turn ended.
const (
	ExitEndTurn      = 0 // the agent finished its turn
	ExitFailure      = 1 // parley send could not run (no daemon, bad flags, connection lost)
	ExitNotDelivered = 3 // the message was refused or its delivery failed
	ExitCancelled    = 4 // the turn was stopped (from parley chat, the dashboard, …)
	ExitAgentError   = 5 // the turn ended in an error (the agent crashed or failed)
	ExitOtherStop    = 6 // the agent stopped for another reason (max_tokens, refusal)
	ExitTimeout      = 7 // --timeout passed before the turn ended
)

type sendFlags struct {
	remoteFlags
	agent, thread, cwd string
	newThread, verbose bool
	timeout            time.Duration
}

func newSendCommand(Build) *cobra.Command {
	var f sendFlags
	cmd := &cobra.Command{
		Use:   "send [flags] TEXT",
		Short: "Send one message and print the answer as it streams",
		Long: `Send one message to an agent, print its answer to stdout as it streams, and
exit with a status that says how the turn ended. For scripts and cron.

The message goes to this terminal's route (the thread parley chat shows here),
unless --thread, --new or --agent say otherwise. TEXT "-" reads stdin.
Cards (permissions, questions) are not answered here: they wait for an answer
from parley chat or the dashboard, and say so on stderr.

Exit status:
  0  end_turn: the agent finished its turn
  1  parley send could not run (no daemon, bad flags, connection lost)
  3  not delivered: the message was refused or its delivery failed
  4  cancelled: the turn was stopped
  5  error: the turn ended in an error (the agent crashed or failed)
  6  the agent stopped for another reason (max_tokens, refusal)
  7  --timeout passed before the turn ended`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.cwd != "" && !f.newThread {
				return errors.New("--cwd goes with --new")
			}
			text := args[0]
			if text == "-" {
				b, err := io.ReadAll(cmd.InOrStdin())
				if err != nil {
					return fmt.Errorf("stdin: %w", err)
				}
				text = string(b)
			}
			if strings.TrimSpace(text) == "" {
				return errors.New("nothing to send")
			}
			server, token, err := f.resolve()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if f.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, f.timeout)
				defer cancel()
			}
			code := sendOne(ctx, server, token, f, text, cmd.OutOrStdout(), cmd.ErrOrStderr())
			if code != 0 {
				return exitCode(code)
			}
			return nil
		},
	}
	f.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.agent, "agent", "", "the agent to ask (a new thread with it when the route's thread is another agent's)")
	fl.StringVar(&f.thread, "thread", "", "send to this thread (parley threads lists them)")
	fl.BoolVar(&f.newThread, "new", false, "start a new thread with this message")
	fl.StringVar(&f.cwd, "cwd", "", "working directory of the --new thread (inside a configured root)")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "report tool calls and receipts on stderr")
	fl.DurationVar(&f.timeout, "timeout", 0, "give up after this long (exit 7); 0 waits for the turn to end")
	return cmd
}

// sendOne sends text and follows its turn to the end, returning the exit status.
func sendOne(ctx context.Context, server, token string, f sendFlags, text string, stdout, stderr io.Writer) int {
	fail := func(code int, format string, args ...any) int {
		fmt.Fprintf(stderr, "parley: "+format+"\n", args...)
		return code
	}
	timedOut := func(err error) int {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fail(ExitTimeout, "timed out after %v", f.timeout)
		}
		return fail(ExitFailure, "connection lost: %v", err)
	}
	c, _, err := client.Dial(ctx, server, token, client.Options{Chat: f.chatID(), Channel: "tui", Since: -1})
	if err != nil {
		return timedOut(err)
	}
	defer c.CloseNow()
	// The connect sequence: config, thread, the replay, replay_done.
	var current chat.ThreadID
	var cfg chat.Config
	var th chat.ThreadEvent
	waitReplay := func() error {
		for {
			ev, err := c.Next(ctx)
			if err != nil {
				return err
			}
			switch ev.Type {
			case chat.TypeConfig:
				_ = ev.Decode(&cfg)
			case chat.TypeThread:
				current = ev.Thread
				_ = ev.Decode(&th)
			case chat.TypeReplayDone:
				return nil
			}
		}
	}
	if err := waitReplay(); err != nil {
		return timedOut(err)
	}
	msg := wire.Message{Type: wire.TypeMessage, MessageID: chat.NewID("m"), Text: text, Agent: f.agent}
	switch {
	case f.newThread:
		msg.Intent = &wire.Intent{New: &wire.NewIntent{Cwd: newCwd(f.cwd, f.agent, th.Thread, cfg), Agent: f.agent}}
	case f.thread != "" && chat.ThreadID(f.thread) != current:
		target, err := client.API{Server: server, Token: token}.Thread(ctx, chat.ThreadID(f.thread))
		if err != nil {
			return fail(ExitFailure, "thread %s: %v", f.thread, err)
		}
		if target.SessionID == "" {
			return fail(ExitFailure, "thread %s has no agent session yet, so it cannot be continued from here", target.ID)
		}
		if err := c.Send(ctx, wire.ResumeSession{Type: wire.TypeResumeSession, Agent: target.Agent, SessionID: target.SessionID, Cwd: target.Cwd}); err != nil {
			return timedOut(err)
		}
		for current != target.ID {
			if err := waitReplay(); err != nil {
				return timedOut(err)
			}
		}
		msg.Agent = ""
	}
	if err := c.Send(ctx, msg); err != nil {
		return timedOut(err)
	}
	started, wrote, endsNL := false, false, true
	for {
		ev, err := c.Next(ctx)
		if err != nil {
			return timedOut(err)
		}
		switch ev.Type {
		case chat.TypeDelivery:
			var d chat.Delivery
			_ = ev.Decode(&d)
			if d.MessageID != msg.MessageID {
				continue
			}
			if f.verbose {
				fmt.Fprintf(stderr, "parley: %s%s\n", d.State, suffixDetail(d.Detail))
			}
			switch d.State {
			case chat.DeliveryFailed:
				return fail(ExitNotDelivered, "not delivered: %s", d.Detail)
			case chat.DeliveryDelivering, chat.DeliverySubmitted:
				started = true
			}
		case chat.TypeTurnStatus:
			var ts chat.TurnStatus
			_ = ev.Decode(&ts)
			if ts.Active && ts.MessageID == msg.MessageID {
				started = true
			}
		case chat.TypeAgentChunk:
			if !started {
				continue // another message's turn, still running
			}
			var p chat.AgentChunk
			_ = ev.Decode(&p)
			if p.Text != "" {
				io.WriteString(stdout, p.Text)
				wrote, endsNL = true, strings.HasSuffix(p.Text, "\n")
			}
		case chat.TypeToolCall:
			if started && f.verbose {
				var p chat.ToolCall
				_ = ev.Decode(&p)
				fmt.Fprintf(stderr, "parley: tool: %s\n", p.Title)
			}
		case chat.TypePermissionRequest, chat.TypeQuestion:
			if started {
				fmt.Fprintln(stderr, "parley: the agent is waiting for an answer to a card: answer it in parley chat or the dashboard")
			}
		case chat.TypeError:
			var p chat.Error
			_ = ev.Decode(&p)
			if p.Ref == msg.MessageID {
				return fail(ExitNotDelivered, "refused: %s", p.Message)
			}
			if started {
				fmt.Fprintf(stderr, "parley: %s\n", p.Message)
			}
		case chat.TypePromptDone:
			var p chat.PromptDone
			_ = ev.Decode(&p)
			if p.MessageID != msg.MessageID {
				continue
			}
			if wrote && !endsNL {
				io.WriteString(stdout, "\n")
			}
			switch p.StopReason {
			case chat.StopEndTurn:
				return ExitEndTurn
			case chat.StopCancelled:
				return fail(ExitCancelled, "the turn was cancelled")
			case chat.StopError:
				return fail(ExitAgentError, "the turn ended in an error")
			default:
				return fail(ExitOtherStop, "the agent stopped: %s", p.StopReason)
			}
		}
	}
}

func suffixDetail(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}

// newCwd is where a new thread works: --cwd, else the route's thread's
// directory, else the agent's first root.
func newCwd(cwd, agent string, th chat.Thread, cfg chat.Config) string {
	if cwd != "" {
		return cwd
	}
	if th.Cwd != "" && (agent == "" || agent == th.Agent) {
		return th.Cwd
	}
	if agent == "" {
		agent = cfg.DefaultAgent
	}
	for _, a := range cfg.Agents {
		if a.ID == agent && len(a.Roots) > 0 {
			return a.Roots[0]
		}
	}
	return th.Cwd
}
