// Package commands is the chat command grammar every IM plugin shares: a line
// starting with "/" is parley's to answer and never reaches an agent (except
// /agent-cmd, which passes one of the agent's own slash commands through).
package commands

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/router"
)

// Command names.
const (
	New      = "new"
	Agent    = "agent"
	Threads  = "threads"
	Switch   = "switch"
	Resume   = "resume"
	Stop     = "stop"
	HandBack = "handback"
	Mode     = "mode"
	Status   = "status"
	Help     = "help"
	AgentCmd = "agent-cmd"
)

// Command is one parsed command.
type Command struct {
	Name string
	Arg  string // the rest of the line, trimmed ("" when none)
}

// ErrUnknown is returned for a "/x" that is no command.
var ErrUnknown = errors.New("unknown command")

// ErrUsage is returned for a command with missing or extra arguments.
var ErrUsage = errors.New("usage")

type spec struct {
	arg   string // "": none; "[x]": optional; "<x>": required
	about string
}

var specs = map[string]spec{
	New:      {"[dir]", "start a new thread (in dir, else in this thread's directory)"},
	Agent:    {"[id]", "list the agents (every machine's: id@machine), or start a new thread with agent id"},
	Threads:  {"", "list the threads, newest first"},
	Switch:   {"<n|id>", "show thread n of /threads (or the thread with that id) here"},
	Resume:   {"<session>", "attach the agent's native session here"},
	Stop:     {"", "stop the turn in flight"},
	HandBack: {"", "continue in a terminal: end parley's agent after the turn and say the command that resumes the session"},
	Mode:     {"[id]", "show the session's mode, or change it"},
	Status:   {"", "what this chat shows: thread, agent, directory, state"},
	Help:     {"", "this list"},
	AgentCmd: {"<cmd>", "send one of the agent's own slash commands"},
}

var order = []string{New, Agent, Threads, Switch, Resume, Stop, HandBack, Mode, Status, Help, AgentCmd}

// Parse reads a line. ok is false when the line is no command (it goes to the
// agent). A "/name@bot" suffix (Telegram's) is dropped. err is ErrUnknown or
// ErrUsage (wrapped with words a person can act on) for a bad command.
func Parse(text string) (cmd Command, ok bool, err error) {
	t := strings.TrimSpace(text)
	if !strings.HasPrefix(t, "/") || strings.HasPrefix(t, "//") {
		return Command{}, false, nil
	}
	name, arg, _ := strings.Cut(t[1:], " ")
	name, _, _ = strings.Cut(name, "@")
	name = strings.ToLower(name)
	arg = strings.TrimSpace(arg)
	sp, known := specs[name]
	if !known {
		return Command{Name: name, Arg: arg}, true, fmt.Errorf("%w /%s: /help lists the commands", ErrUnknown, name)
	}
	switch {
	case sp.arg == "" && arg != "":
		return Command{Name: name, Arg: arg}, true, fmt.Errorf("%w: /%s takes no argument", ErrUsage, name)
	case strings.HasPrefix(sp.arg, "<") && arg == "":
		return Command{Name: name}, true, fmt.Errorf("%w: /%s %s", ErrUsage, name, sp.arg)
	}
	return Command{Name: name, Arg: arg}, true, nil
}

// HelpText lists the commands.
func HelpText() string {
	var b strings.Builder
	b.WriteString("Commands:")
	for _, n := range order {
		sp := specs[n]
		line := "/" + n
		if sp.arg != "" {
			line += " " + sp.arg
		}
		fmt.Fprintf(&b, "\n%s: %s", line, sp.about)
	}
	b.WriteString("\nAnything else goes to the agent.")
	return b.String()
}

// Router is what running a command needs of the router.
type Router interface {
	Send(ctx context.Context, req router.SendRequest) (chat.Delivery, chat.ThreadID, error)
	Control(ctx context.Context, c router.Control) error
	NewThread(ctx context.Context, from chat.RouteKey, agent, cwd string) (chat.ThreadID, error)
	OpenThread(ctx context.Context, from chat.RouteKey, id chat.ThreadID) error
	ThreadOf(ctx context.Context, route chat.RouteKey) (chat.ThreadID, error)
	ResumeSession(ctx context.Context, from chat.RouteKey, agent, sessionID, cwd string) (chat.ThreadID, error)
	Agents() []chat.AgentInfo
	DefaultAgent() string
}

// Store is what running a command reads.
type Store interface {
	Thread(ctx context.Context, id chat.ThreadID) (chat.Thread, error)
	Threads(ctx context.Context) ([]chat.Thread, error)
	// Tail returns the last n events of a thread, in seq order.
	Tail(ctx context.Context, id chat.ThreadID, n int) ([]chat.Event, error)
}

// Runner runs commands for one channel's routes.
type Runner struct {
	Router Router
	Store  Store
	// Agent is the agent of new threads when the route shows none ("" = default).
	Agent string
}

// MaxListed bounds /threads.
const MaxListed = 10

// Run runs a parsed command on route and returns the answer for the person.
func (r Runner) Run(ctx context.Context, route chat.RouteKey, c Command) string {
	cur, err := r.current(ctx, route)
	if err != nil {
		return "error: " + err.Error()
	}
	switch c.Name {
	case Help:
		return HelpText()
	case Status:
		if cur == nil {
			return "No thread yet: say something, or /new."
		}
		s := fmt.Sprintf("Thread %s: agent %s in %s, %s", cur.ID, cur.Agent, cur.Cwd, cur.State)
		if cur.Mode != "" {
			s += ", mode " + cur.Mode
		}
		if cur.SessionID != "" {
			s += ", session " + cur.SessionID
		}
		return s
	case New:
		agent, cwd := r.newAgent(cur), c.Arg
		if cwd == "" && cur != nil {
			cwd = cur.Cwd
		}
		id, err := r.Router.NewThread(ctx, route, agent, cwd)
		if err != nil {
			return "could not start a thread: " + err.Error()
		}
		return started(id, agent)
	case Agent:
		if c.Arg == "" {
			var b strings.Builder
			b.WriteString("Agents:")
			want, marked := r.newAgent(cur), false
			for _, a := range r.Router.Agents() {
				id := a.ID
				if a.Node != "" {
					id += "@" + a.Node // a cluster's hub lists every machine's, its own first
				}
				mark := " "
				if !marked && (id == want || a.ID == want) {
					mark, marked = "*", true
				}
				fmt.Fprintf(&b, "\n%s %s (%s, %s)", mark, id, a.Name, a.Status)
			}
			return b.String()
		}
		cwd := ""
		if cur != nil && cur.Node == "" {
			cwd = cur.Cwd // another machine's folders are its own
		}
		id, err := r.Router.NewThread(ctx, route, c.Arg, cwd)
		if err != nil {
			return "could not start a thread: " + err.Error()
		}
		return started(id, c.Arg)
	case Threads:
		list, err := r.threads(ctx)
		if err != nil {
			return "error: " + err.Error()
		}
		if len(list) == 0 {
			return "No threads yet."
		}
		var b strings.Builder
		b.WriteString("Threads:")
		for i, th := range list {
			mark := " "
			if cur != nil && th.ID == cur.ID {
				mark = "*"
			}
			title := th.Title
			if title == "" {
				title = th.Cwd
			}
			fmt.Fprintf(&b, "\n%s%d. %s %s: %s (%s)", mark, i+1, th.ID, th.Agent, title, th.State)
		}
		return b.String()
	case Switch:
		id := chat.ThreadID(c.Arg)
		if n, err := strconv.Atoi(c.Arg); err == nil {
			list, err := r.threads(ctx)
			if err != nil {
				return "error: " + err.Error()
			}
			if n < 1 || n > len(list) {
				return fmt.Sprintf("no thread %d: /threads lists %d", n, len(list))
			}
			id = list[n-1].ID
		}
		if err := r.Router.OpenThread(ctx, route, id); err != nil {
			return "could not switch: " + err.Error()
		}
		return "Switched to thread " + string(id)
	case Resume:
		cwd := ""
		if cur != nil {
			cwd = cur.Cwd
		}
		id, err := r.Router.ResumeSession(ctx, route, r.agentOf(cur), c.Arg, cwd)
		if err != nil {
			return "could not resume: " + err.Error()
		}
		return "Resumed session " + c.Arg + " in thread " + string(id)
	case Stop:
		err := r.Router.Control(ctx, router.Control{From: route, Stop: true})
		switch {
		case errors.Is(err, chat.ErrNoTurn):
			return "Nothing is running."
		case err != nil:
			return "could not stop: " + err.Error()
		}
		return "Stopped."
	case HandBack:
		return r.handBack(ctx, route, cur)
	case Mode:
		if c.Arg == "" {
			if cur == nil || cur.Mode == "" {
				return "No mode is set."
			}
			return "Mode: " + cur.Mode
		}
		if err := r.Router.Control(ctx, router.Control{From: route, SetMode: &router.SetMode{ModeID: c.Arg}}); err != nil {
			return "could not set the mode: " + err.Error()
		}
		return "Mode set to " + c.Arg
	case AgentCmd:
		text := "/" + strings.TrimPrefix(c.Arg, "/")
		// The agent is the thread's (so no new thread), or for a chat without
		// one yet the plugin's: its first thread is made by this message.
		_, _, err := r.Router.Send(ctx, router.SendRequest{From: route, Message: router.Message{
			MessageID: chat.NewID("m"), Text: text, Agent: r.agentOf(cur)}})
		if err != nil {
			return "could not send: " + err.Error()
		}
		return "Sent " + text + " to the agent."
	}
	return "unknown command /" + c.Name
}

func (r Runner) current(ctx context.Context, route chat.RouteKey) (*chat.Thread, error) {
	id, err := r.Router.ThreadOf(ctx, route)
	if err != nil || id == "" {
		return nil, err
	}
	th, err := r.Store.Thread(ctx, id)
	if err != nil {
		return nil, err
	}
	return &th, nil
}

// started says what NewThread did: a thread made here, or (no id) one on
// another machine that the next message starts.
func started(id chat.ThreadID, agent string) string {
	if id == "" {
		a, node, _ := strings.Cut(agent, "@")
		return "The next message starts a new thread with " + a + " on machine " + node
	}
	return "New thread " + string(id) + " with " + agent
}

// newAgent is the agent of a new thread (/new): agentOf, on the current
// thread's machine ("agent@node") when it is another machine's.
func (r Runner) newAgent(cur *chat.Thread) string {
	if cur != nil && cur.Node != "" {
		return cur.Agent + "@" + cur.Node
	}
	return r.agentOf(cur)
}

// agentOf is the chat's agent: the current thread's, else the chat's own.
func (r Runner) agentOf(cur *chat.Thread) string {
	switch {
	case cur != nil:
		return cur.Agent
	case r.Agent != "":
		return r.Agent
	}
	return r.Router.DefaultAgent()
}

func (r Runner) threads(ctx context.Context) ([]chat.Thread, error) {
	list, err := r.Store.Threads(ctx)
	if err != nil {
		return nil, err
	}
	if len(list) > MaxListed {
		list = list[:MaxListed]
	}
	return list, nil
}
