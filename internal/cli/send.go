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

// reconnectFor is how long parley send keeps trying to get its socket back.
const reconnectFor = time.Minute

// sendOne sends text and follows its turn to the end, returning the exit status.
// A dropped socket is dialled again with since, so the answer is printed whole
// and nothing twice; the message keeps its id, so it is never delivered twice.
func sendOne(ctx context.Context, server, token string, f sendFlags, text string, stdout, stderr io.Writer) int {
	fail := func(code int, format string, args ...any) int {
		fmt.Fprintf(stderr, "parley: "+format+"\n", args...)
		return code
	}
	lost := func(err error) int {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fail(ExitTimeout, "timed out after %v", f.timeout)
		}
		return fail(ExitFailure, "connection lost: %v", err)
	}
	s := &sendSocket{server: server, token: token, chat: f.chatID()}
	if err := s.dial(ctx); err != nil {
		return lost(err)
	}
	defer func() { s.c.CloseNow() }()
	// The connect sequence: config, thread, the replay, replay_done.
	if err := s.untilReplayDone(ctx); err != nil {
		return lost(err)
	}
	msg := wire.Message{Type: wire.TypeMessage, MessageID: chat.NewID("m"), Text: text, Agent: f.agent}
	switch {
	case f.newThread:
		msg.Intent = &wire.Intent{New: &wire.NewIntent{Cwd: newCwd(f.cwd, f.agent, s.th, s.cfg), Agent: f.agent}}
	case f.thread != "" && chat.ThreadID(f.thread) != s.th.ID:
		target, err := client.API{Server: server, Token: token}.Thread(ctx, chat.ThreadID(f.thread))
		if err != nil {
			return fail(ExitFailure, "thread %s: %v", f.thread, err)
		}
		if err := s.c.Send(ctx, wire.OpenThread{Type: wire.TypeOpenThread, ThreadID: string(target.ID)}); err != nil {
			return lost(err)
		}
		for s.th.ID != target.ID {
			ev, err := s.c.Next(ctx)
			if err != nil {
				return lost(err)
			}
			s.fresh(ev)
			if ev.Type == chat.TypeError && ev.Seq == 0 {
				var p chat.Error
				_ = ev.Decode(&p)
				return fail(ExitFailure, "thread %s could not be opened: %s", target.ID, p.Message)
			}
		}
		if err := s.untilReplayDone(ctx); err != nil {
			return lost(err)
		}
		msg.Agent = ""
	}
	if err := s.c.Send(ctx, msg); err != nil {
		return lost(err)
	}
	accepted, started, wrote, endsNL := false, false, false, true
	for {
		ev, err := s.c.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return lost(err)
			}
			if f.verbose {
				fmt.Fprintf(stderr, "parley: socket lost (%v); reconnecting\n", err)
			}
			if err := s.redial(ctx); err != nil {
				return lost(err)
			}
			if !accepted {
				// It may not have got there: the same id again is delivered once.
				if err := s.c.Send(ctx, msg); err != nil {
					return lost(err)
				}
			}
			continue
		}
		if !s.fresh(ev) {
			continue // already handled before the socket dropped
		}
		switch ev.Type {
		case chat.TypeUserMessage:
			var p chat.UserMessage
			_ = ev.Decode(&p)
			accepted = accepted || p.MessageID == msg.MessageID
		case chat.TypeDelivery:
			var d chat.Delivery
			_ = ev.Decode(&d)
			if d.MessageID != msg.MessageID {
				continue
			}
			accepted = true
			if f.verbose {
				fmt.Fprintf(stderr, "parley: %s%s\n", d.State, suffixDetail(d.Detail))
			}
			switch d.State {
			case chat.DeliveryFailed:
				return fail(ExitNotDelivered, "not delivered: %s", d.Detail)
			case chat.DeliveryUnknown:
				return fail(ExitNotDelivered, "delivery unknown: %s", d.Detail)
			case chat.DeliveryDelivering, chat.DeliverySubmitted:
				started = true
			}
		case chat.TypeTurnStatus:
			var ts chat.TurnStatus
			_ = ev.Decode(&ts)
			if ts.Active && ts.MessageID == msg.MessageID {
				accepted, started = true, true
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
			if p.Ref == msg.MessageID && !started {
				return fail(ExitNotDelivered, "refused: %s", p.Message)
			}
			if p.Ref == msg.MessageID || started {
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

// sendSocket is parley send's socket with the cursor it reconnects from.
type sendSocket struct {
	server, token, chat string

	c       *client.Conn
	cfg     chat.Config
	th      chat.Thread // the route's thread
	lastSeq int64       // the newest seq of th handled
}

func (s *sendSocket) dial(ctx context.Context) error {
	opt := client.Options{Chat: s.chat, Channel: "tui", Since: -1}
	if s.th.ID != "" {
		opt.Since, opt.Thread = s.lastSeq, s.th.ID
	}
	c, _, err := client.Dial(ctx, s.server, s.token, opt)
	if err != nil {
		return err
	}
	s.c = c
	return nil
}

// redial gets the socket back, trying for reconnectFor.
func (s *sendSocket) redial(ctx context.Context) error {
	s.c.CloseNow()
	deadline := time.Now().Add(reconnectFor)
	wait := 200 * time.Millisecond
	for {
		// Wait first: a daemon that just closed the socket is likely going down.
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		err := s.dial(ctx)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		wait = min(wait*2, 2*time.Second)
	}
}

// fresh keeps the cursor and reports whether ev is new: a log event of the
// route's thread not handled yet, or a connection-level frame.
func (s *sendSocket) fresh(ev client.Event) bool {
	switch {
	case ev.Type == chat.TypeConfig:
		_ = ev.Decode(&s.cfg)
	case ev.Type == chat.TypeThread:
		var te chat.ThreadEvent
		_ = ev.Decode(&te)
		if te.Thread.ID != s.th.ID {
			s.lastSeq = 0
		}
		s.th = te.Thread
	case ev.Seq > 0:
		if ev.Thread != s.th.ID || ev.Seq <= s.lastSeq {
			return false
		}
		s.lastSeq = ev.Seq
	}
	return true
}

// untilReplayDone reads through one connect (or switch) sequence.
func (s *sendSocket) untilReplayDone(ctx context.Context) error {
	for {
		ev, err := s.c.Next(ctx)
		if err != nil {
			return err
		}
		s.fresh(ev)
		if ev.Type == chat.TypeReplayDone {
			return nil
		}
	}
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

func suffixDetail(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}
