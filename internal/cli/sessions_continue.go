package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/sessions"
)

func init() { sessionsSubcommands = append(sessionsSubcommands, newSessionsContinueCommand) }

// continueWait bounds how long parley sessions continue waits for the daemon.
const continueWait = 2 * time.Minute

func newSessionsContinueCommand() *cobra.Command {
	var rf remoteFlags
	var machine, agent string
	var watch bool
	cmd := &cobra.Command{
		Use:     "continue ID",
		Aliases: []string{"adopt"},
		Short:   "Continue an agent session (parley sessions lists them) in a parley thread",
		Long: `Continue one of the agents' own sessions in parley: the agent resumes that
same session (claude --resume, ACP session/load), its earlier turns are
imported into the thread (marked as from before parley), and the thread is
the one parley chat shows in this terminal. ID is a session id as parley
sessions prints it, or the start of one.

A Claude Code session running now in a tmux pane is adopted (parley sessions
adopt is the same command): the thread drives that pane, typing into it as a
person would, and never ends it; handing it back shows the tmux attach
command. One running in a plain terminal is refused (two processes on one
session fork it) unless --watch: the thread then follows it, read-only,
until it exits, and can continue it after. On a cluster's hub --machine says
which machine's session it is, when two have the same id.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			server, token, err := rf.resolve()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), continueWait)
			defer cancel()
			api := client.API{Server: server, Token: token}
			l, err := api.Sessions(ctx, sessions.Filter{Machine: machine, All: true})
			if err != nil {
				return err
			}
			s, err := pickSession(l.Sessions, args[0])
			if err != nil {
				return err
			}
			if agent != "" {
				s.Agent = agent
			}
			route := chat.RouteKey{Channel: "tui", Chat: rf.chatID()}
			if err := continueOn(ctx, server, token, route.Chat, s, watch); err != nil {
				return err
			}
			id, err := api.RouteThread(ctx, route)
			if err != nil {
				return err
			}
			where := ""
			if s.Node != "" {
				where = " on machine " + s.Node
			}
			how := "continues"
			switch {
			case watch:
				how = "is watched"
			case s.Running && strings.HasPrefix(s.Where, "tmux:"):
				how = "is adopted from its tmux pane " + strings.TrimPrefix(s.Where, "tmux:") + ","
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s session %s%s %s in thread %s (%s): parley chat shows it\n", s.Agent, s.ID, where, how, id, s.Cwd)
			return nil
		},
	}
	rf.register(cmd)
	cmd.Flags().StringVar(&machine, "machine", "", "the machine the session is on (a cluster's node name)")
	cmd.Flags().StringVar(&agent, "agent", "", "the configured agent that resumes it (default: the session's agent)")
	cmd.Flags().BoolVar(&watch, "watch", false, "follow a session running in a terminal, read-only, until it exits")
	return cmd
}

// pickSession is the one session whose id is id, or starts with it.
func pickSession(list []sessions.Session, id string) (sessions.Session, error) {
	var found []sessions.Session
	for _, s := range list {
		if s.ID == id {
			return s, nil
		}
		if strings.HasPrefix(s.ID, id) {
			found = append(found, s)
		}
	}
	switch len(found) {
	case 0:
		return sessions.Session{}, fmt.Errorf("no agent session %q inside the roots (parley sessions --all lists them)", id)
	case 1:
		return found[0], nil
	}
	return sessions.Session{}, fmt.Errorf("%d sessions start with %q: give more of the id, or --machine", len(found), id)
}

// continueOn sends resume_session for s on chat's route and waits for the
// daemon's answer: done once it is continued, or the error that refused it.
func continueOn(ctx context.Context, server, token, chatID string, s sessions.Session, watch bool) error {
	c, _, err := client.Dial(ctx, server, token, client.Options{Chat: chatID, Channel: "tui", Since: -1})
	if err != nil {
		return err
	}
	defer c.Close()
	ref := chat.NewID("continue")
	if err := c.Send(ctx, map[string]any{"type": "resume_session", "ref": ref,
		"agent": s.Agent, "session_id": s.ID, "cwd": s.Cwd, "node": s.Node, "watch": watch}); err != nil {
		return err
	}
	for {
		ev, err := c.Next(ctx)
		if err != nil {
			return err
		}
		var a struct {
			Ref     string `json:"ref"`
			Message string `json:"message"`
		}
		if ev.Decode(&a) != nil || a.Ref != ref {
			continue
		}
		switch ev.Type {
		case chat.TypeDone:
			return nil
		case chat.TypeError:
			return errors.New("not continued: " + a.Message)
		}
	}
}
