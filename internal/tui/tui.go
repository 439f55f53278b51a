// Package tui is `parley chat`: a Bubble Tea program that speaks the same chat
// socket as the dashboard, as channel kind "tui". The model (Model) is a pure
// function of the frames it is handed and the keys pressed; the Link keeps the
// socket open and reconnects with `since`. Nothing a person types is dropped:
// a message typed while offline waits in the transcript and is sent (with its
// client-made id, so never twice) as soon as the socket is back.
package tui

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
)

// Options choose what `parley chat` opens and how it looks.
type Options struct {
	Server, Token string
	Chat          string        // the route's chat id (channel "tui")
	Agent         string        // open this agent's newest thread (or start one)
	Thread        chat.ThreadID // open this thread
	New           bool          // the first message starts a new thread
	Cwd           string        // … in this directory
	Worktree      bool          // … in a git worktree of its own
	NoColor       bool          // honour NO_COLOR
	Logger        *slog.Logger
}

// Backend is what the model asks of the daemon; the Link is the real one.
type Backend interface {
	Send(ctx context.Context, v any) error
	Threads(ctx context.Context) ([]chat.Thread, error)
	// Search finds threads by title and message text (GET /api/search);
	// at a cluster's hub it names the machines it did not cover.
	Search(ctx context.Context, q string) ([]chat.SearchHit, []client.Unsearched, error)
	// Usage is a thread's usage totals (GET /api/threads/{id}).
	Usage(ctx context.Context, id chat.ThreadID) (chat.UsageTotals, error)
}

// Run runs the terminal client until the person quits or ctx ends.
func Run(ctx context.Context, opt Options) error {
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	link := NewLink(opt.Server, opt.Token, client.Options{Chat: opt.Chat, Channel: "tui", Since: -1, DraftAppends: true}, log)
	m := New(opt, link)
	popts := []tea.ProgramOption{tea.WithContext(ctx)}
	if opt.NoColor {
		popts = append(popts, tea.WithColorProfile(colorprofile.Ascii))
	}
	p := tea.NewProgram(m, popts...)
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		link.Run(lctx, p.Send)
	}()
	final, err := p.Run()
	cancel()
	<-done
	if err != nil {
		return fmt.Errorf("tui: %w", err)
	}
	if fm, ok := final.(*Model); ok && fm.fatal != nil {
		return fm.fatal
	}
	return nil
}

// NoColorEnv reports whether the environment asks for no color (no-color.org).
func NoColorEnv() bool { return os.Getenv("NO_COLOR") != "" }
