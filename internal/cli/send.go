package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/router"
	"github.com/parleyhq/parley/internal/uploads"
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
	files              []string
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

The message goes to the thread parley chat shows in this terminal, unless
--thread, --new or --agent say otherwise; whichever, an open parley chat stays
on its thread (send follows its turn from a route of its own). TEXT "-" reads
stdin. --file PATH (repeatable, at most 10) attaches a file: it is saved in
the thread's working directory (.parley-uploads/) and the message names its
path, so any agent can read it.
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
			files, err := readFiles(f.files)
			if err != nil {
				return err
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
			code := sendOne(ctx, server, token, f, router.Message{MessageID: chat.NewID("m"), Text: text, Agent: f.agent, Files: files},
				cmd.OutOrStdout(), cmd.ErrOrStderr())
			if code != 0 {
				return exitCode(code)
			}
			return nil
		},
	}
	f.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.agent, "agent", "", "the agent to ask (a new thread with it when the route's thread is another agent's); at a cluster's hub AGENT@MACHINE; ignored with --thread")
	fl.StringVar(&f.thread, "thread", "", "send to this thread (parley threads lists them)")
	fl.BoolVar(&f.newThread, "new", false, "start a new thread with this message")
	fl.StringVar(&f.cwd, "cwd", "", "working directory of the --new thread (inside a configured root)")
	fl.StringArrayVar(&f.files, "file", nil, "attach this file (repeatable): saved in the thread's working directory, its path named in the message")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "report tool calls and receipts on stderr")
	fl.DurationVar(&f.timeout, "timeout", 0, "give up after this long (exit 7); 0 waits for the turn to end")
	return cmd
}

// readFiles reads --file's files for a message; the daemon judges their
// size (limits.max_message_bytes) and saves them.
func readFiles(paths []string) ([]uploads.File, error) {
	if len(paths) > uploads.MaxFiles {
		return nil, fmt.Errorf("--file: %d files: at most %d in one message", len(paths), uploads.MaxFiles)
	}
	var out []uploads.File
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && st.Size() > int64(config.MaxMessageRange.Max) {
			return nil, fmt.Errorf("--file %s: %d bytes is more than any message may hold (%d)", p, st.Size(), config.MaxMessageRange.Max)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("--file: %w", err)
		}
		mime := http.DetectContentType(data)
		if !uploads.IsImageType(mime) {
			mime = ""
		}
		out = append(out, uploads.File{Name: filepath.Base(p), MIMEType: mime, Data: data})
	}
	return out, nil
}

// SendRouteSuffix makes parley send's own route from the terminal's: a
// terminal's sends share it, and it is never the one parley chat shows.
const SendRouteSuffix = "/send"

// reconnectFor is how long parley send keeps trying to get its socket back.
const reconnectFor = time.Minute

// sendOne sends text and follows its turn to the end, returning the exit status.
// client.Follow keeps the socket: a dropped one is dialled again with since, so
// the answer is printed whole and nothing twice; the message keeps its id, so it
// is never delivered twice. What is left here is the turn and its printing.
func sendOne(ctx context.Context, server, token string, f sendFlags, msg router.Message, stdout, stderr io.Writer) int {
	api := client.API{Server: server, Token: token}
	// The terminal's route is parley chat's: send reads which thread it shows
	// and sends from a route of its own, so an open parley chat is never moved
	// (a cron job's --new or --thread used to take it to another thread). Only
	// when the terminal shows no thread yet does the first send start it there.
	shown, err := api.RouteThread(ctx, chat.RouteKey{Channel: "tui", Chat: f.chatID()})
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return (&sendTurn{stderr: stderr}).fail(ExitTimeout, "timed out after %v", f.timeout)
		}
		return (&sendTurn{stderr: stderr}).fail(ExitFailure, "%v", err)
	}
	route := f.chatID()
	var target chat.ThreadID
	if shown != "" || f.newThread || f.thread != "" {
		route += SendRouteSuffix
		target = chat.ThreadID(f.thread)
		if target == "" && !f.newThread {
			target = shown
		}
	}
	fl := client.NewFollow(server, token, client.Options{Chat: route, Channel: "tui", Since: -1})
	fl.FailFast, fl.GiveUp, fl.MaxBackoff = true, reconnectFor, 2*time.Second
	t := &sendTurn{f: f, api: api, fl: fl, stdout: stdout, stderr: stderr, endsNL: true, shown: shown, target: target,
		msg: msg}
	err = fl.Run(ctx, func(u client.Update) error { return t.handle(ctx, u) })
	var code sendExit
	switch {
	case errors.As(err, &code):
		return int(code)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return t.fail(ExitTimeout, "timed out after %v", f.timeout)
	default:
		return t.fail(ExitFailure, "connection lost: %v", err)
	}
}

// sendExit ends the follow with parley send's exit status (its words printed).
type sendExit int

func (e sendExit) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// Where parley send is with its message.
const (
	sendConnecting = iota // until the first replay_done
	sendOpening           // --thread asked for; until the route shows it
	sendSent              // the message is on its way; following its turn
)

// sendTurn is parley send's message and what it has seen of its turn.
type sendTurn struct {
	f              sendFlags
	api            client.API
	fl             *client.Follow
	stdout, stderr io.Writer
	msg            router.Message

	phase  int
	cfg    chat.Config
	th     chat.Thread   // the send route's thread
	shown  chat.ThreadID // the thread parley chat shows in this terminal ("" none)
	target chat.ThreadID // the thread to open on the send route: --thread, else shown

	accepted, started, wrote, endsNL bool
}

func (t *sendTurn) fail(code int, format string, args ...any) int {
	fmt.Fprintf(t.stderr, "parley: "+format+"\n", args...)
	return code
}

func (t *sendTurn) exit(code int, format string, args ...any) error {
	return sendExit(t.fail(code, format, args...))
}

// handle is the client.Follow handler: every event comes once, in order.
func (t *sendTurn) handle(ctx context.Context, u client.Update) error {
	if u.Kind == client.UpdateOffline && u.Attempt == 0 && t.f.verbose {
		fmt.Fprintf(t.stderr, "parley: socket lost (%v); reconnecting\n", u.Err)
	}
	if u.Kind != client.UpdateEvent {
		return nil
	}
	ev := u.Event
	switch ev.Type {
	case chat.TypeConfig:
		_ = ev.Decode(&t.cfg)
	case chat.TypeThread:
		var te chat.ThreadEvent
		_ = ev.Decode(&te)
		t.th = te.Thread
	case chat.TypeReplayDone:
		return t.caughtUp(ctx)
	}
	if t.phase == sendOpening && ev.Type == chat.TypeError && ev.Seq == 0 {
		var p chat.Error
		_ = ev.Decode(&p)
		return t.exit(ExitFailure, "thread %s could not be opened: %s", t.target, p.Message)
	}
	if t.phase != sendSent {
		return nil
	}
	return t.onEvent(ev)
}

// caughtUp moves on at each replay_done: the message goes once the route
// shows the thread it is for, and again (same id: delivered once) after a
// reconnect when no receipt says it arrived.
func (t *sendTurn) caughtUp(ctx context.Context) error {
	send := func(v any) error {
		_ = t.fl.Send(ctx, v) // should the socket have dropped, the next replay_done sends again
		return nil
	}
	switch t.phase {
	case sendConnecting:
		if agent, node, ok := strings.Cut(t.f.agent, "@"); ok && t.f.thread == "" {
			isNew, err := t.onMachine(ctx, agent, node)
			if err != nil {
				return err
			}
			if isNew {
				t.phase = sendSent
				return send(wire.Frame(wire.TypeMessage, t.msg))
			}
		}
		switch {
		case t.f.newThread:
			near := t.th
			if t.shown != "" {
				if th, err := t.api.Thread(ctx, t.shown); err == nil {
					near = th // a new thread works where the terminal's does
				}
			}
			t.msg.Intent = &router.Intent{New: &router.NewIntent{Cwd: newCwd(t.f.cwd, t.f.agent, near, t.cfg), Agent: t.f.agent}}
		case t.target != "" && t.target != t.th.ID:
			if t.f.thread != "" {
				target, err := t.api.Thread(ctx, t.target)
				if err != nil {
					return t.exit(ExitFailure, "thread %s: %v", t.f.thread, err)
				}
				t.target, t.msg.Agent = target.ID, ""
			}
			t.phase = sendOpening
			return send(wire.Frame(wire.TypeOpenThread, wire.OpenThread{ThreadID: string(t.target)}))
		}
		t.phase = sendSent
		return send(wire.Frame(wire.TypeMessage, t.msg))
	case sendOpening:
		if t.th.ID != t.target {
			return send(wire.Frame(wire.TypeOpenThread, wire.OpenThread{ThreadID: string(t.target)}))
		}
		t.phase = sendSent
		return send(wire.Frame(wire.TypeMessage, t.msg))
	default:
		if !t.accepted {
			return send(wire.Frame(wire.TypeMessage, t.msg))
		}
	}
	return nil
}

// onEvent follows the message's turn: receipts, the answer printed as it
// streams, and how the turn ended.
func (t *sendTurn) onEvent(ev client.Event) error {
	switch ev.Type {
	case chat.TypeUserMessage:
		var p chat.UserMessage
		_ = ev.Decode(&p)
		t.accepted = t.accepted || p.MessageID == t.msg.MessageID
	case chat.TypeDelivery:
		var d chat.Delivery
		_ = ev.Decode(&d)
		if d.MessageID != t.msg.MessageID {
			return nil
		}
		t.accepted = true
		if t.f.verbose {
			fmt.Fprintf(t.stderr, "parley: %s%s\n", d.State, suffixDetail(d.Detail))
		}
		switch d.State {
		case chat.DeliveryFailed:
			return t.exit(ExitNotDelivered, "not delivered: %s", d.Detail)
		case chat.DeliveryUnknown:
			return t.exit(ExitNotDelivered, "delivery unknown: %s", d.Detail)
		case chat.DeliveryDelivering, chat.DeliverySubmitted:
			t.started = true
		}
	case chat.TypeTurnStatus:
		var ts chat.TurnStatus
		_ = ev.Decode(&ts)
		if ts.Active && ts.MessageID == t.msg.MessageID {
			t.accepted, t.started = true, true
		}
	case chat.TypeAgentChunk:
		if !t.started {
			return nil // another message's turn, still running
		}
		var p chat.AgentChunk
		_ = ev.Decode(&p)
		if p.Text != "" {
			io.WriteString(t.stdout, p.Text)
			t.wrote, t.endsNL = true, strings.HasSuffix(p.Text, "\n")
		}
	case chat.TypeToolCall:
		if t.started && t.f.verbose {
			var p chat.ToolCall
			_ = ev.Decode(&p)
			fmt.Fprintf(t.stderr, "parley: tool: %s\n", p.Title)
		}
	case chat.TypePermissionRequest, chat.TypeQuestion:
		if t.started {
			fmt.Fprintln(t.stderr, "parley: the agent is waiting for an answer to a card: answer it in parley chat or the dashboard")
		}
	case chat.TypeError:
		var p chat.Error
		_ = ev.Decode(&p)
		if p.Ref == t.msg.MessageID && !t.started {
			return t.exit(ExitNotDelivered, "refused: %s", p.Message)
		}
		if p.Ref == t.msg.MessageID || t.started {
			fmt.Fprintf(t.stderr, "parley: %s\n", p.Message)
		}
	case chat.TypePromptDone:
		var p chat.PromptDone
		_ = ev.Decode(&p)
		if p.MessageID != t.msg.MessageID {
			return nil
		}
		if t.wrote && !t.endsNL {
			io.WriteString(t.stdout, "\n")
		}
		switch p.StopReason {
		case chat.StopEndTurn:
			return sendExit(ExitEndTurn)
		case chat.StopCancelled:
			return t.exit(ExitCancelled, "the turn was cancelled")
		case chat.StopError:
			return t.exit(ExitAgentError, "the turn ended in an error")
		default:
			return t.exit(ExitOtherStop, "the agent stopped: %s", p.StopReason)
		}
	}
	return nil
}

// onMachine is --agent AGENT@MACHINE at a cluster's hub: the terminal's
// thread when it is that agent's on that machine (and --new is not given),
// else a new thread there, working in --cwd, else where the terminal's
// thread works when it is that agent's on that machine, else in the agent's
// first root there (that machine checks the directory against its own
// roots). A terminal's thread that cannot be read is an error, never a
// reason to start another thread.
func (t *sendTurn) onMachine(ctx context.Context, agent, node string) (isNew bool, err error) {
	if t.cfg.Node == "" {
		return false, t.exit(ExitFailure, "--agent %s@%s: this parley is not a cluster's hub; name the agent alone", agent, node)
	}
	var info *chat.AgentInfo
	for i, a := range t.cfg.Agents {
		if a.ID == agent && a.Node == node {
			info = &t.cfg.Agents[i]
		}
	}
	if info == nil {
		return false, t.exit(ExitFailure, "--agent %s@%s: machine %q has no agent %q (parley nodes lists the machines and their agents)", agent, node, node, agent)
	}
	t.msg.Agent = ""
	var near chat.Thread
	if t.shown != "" {
		if near, err = t.api.Thread(ctx, t.shown); err != nil {
			return false, t.exit(ExitFailure, "reading the terminal's thread %s: %v", t.shown, err)
		}
	}
	same := near.ID != "" && near.Agent == agent && (near.Node == node || near.Node == "" && node == t.cfg.Node)
	if same && !t.f.newThread {
		return false, nil // the terminal's thread: opened as any other
	}
	cwd := t.f.cwd
	if cwd == "" && same {
		cwd = near.Cwd
	}
	if cwd == "" && len(info.Roots) > 0 {
		cwd = info.Roots[0]
	}
	t.msg.Intent = &router.Intent{New: &router.NewIntent{Agent: agent, Node: node, Cwd: cwd}}
	t.target = ""
	return true, nil
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
