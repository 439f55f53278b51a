package tmux

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver/tmux/ctl"
	"github.com/parleyhq/parley/internal/driver/tmux/pane"
)

// Debug is `parley debug pane <target>`: it runs the driver's own readers on
// the live pane of a tmux server (socket; "" is parley's own) and prints what
// they see, with the raw capture saved beside it. target is a tmux session
// name or a thread id.
func Debug(ctx context.Context, w io.Writer, socket, target string) error {
	if socket == "" {
		socket = DefaultSocket
	}
	return DebugSocket(ctx, w, socket, target, os.TempDir())
}

// DebugAny is Debug on the first of sockets (tmux servers, in order) that has
// the target's session: the agents' own servers, from the config.
func DebugAny(ctx context.Context, w io.Writer, sockets []string, target string) error {
	var tried []string
	for _, s := range sockets {
		err := DebugSocket(ctx, w, s, target, os.TempDir())
		if !errors.Is(err, ctl.ErrNoSession) {
			return err
		}
		tried = append(tried, "-L "+s)
	}
	return fmt.Errorf("tmux: debug: no session %q on %s: %w", target, strings.Join(tried, ", "), ctl.ErrNoSession)
}

// DebugSocket is Debug on a given tmux server, saving the capture in saveDir.
func DebugSocket(ctx context.Context, w io.Writer, socket, target, saveDir string) error {
	c, err := ctl.New("", socket, nil)
	if err != nil {
		return err
	}
	name := target
	ok := false
	if ctl.ValidName(name) {
		if ok, err = c.HasSession(ctx, name); err != nil {
			return err
		}
	}
	if !ok {
		name = SessionName(chat.ThreadID(target))
		if ok, err = c.HasSession(ctx, name); err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("tmux: debug: no session %q on -L %s: %w", target, socket, ctl.ErrNoSession)
		}
	}
	info, err := c.Pane(ctx, ctl.SessionTarget(name))
	if err != nil {
		return err
	}
	raw, err := c.Capture(ctx, ctl.SessionTarget(name), -historyLines)
	if err != nil {
		return err
	}
	saved := filepath.Join(saveDir, fmt.Sprintf("parley-pane-%s-%s.ansi", name, time.Now().UTC().Format("20060102T150405.000")))
	if err := os.WriteFile(saved, []byte(raw), 0o600); err != nil {
		return fmt.Errorf("tmux: debug: save capture: %w", err)
	}
	scr := pane.Read(raw)
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	p("session:       %s (pane %s, -L %s)", name, info.ID, socket)
	note := ""
	switch {
	case info.Dead:
		note = "  ← a dead pane: the agent exited (the next send starts it again in a session parley started)"
	case shells[info.CurrentCommand]:
		note = "  ← a shell: the agent is not running (the next send starts it again in a session parley started)"
	}
	p("command:       %s%s", info.CurrentCommand, note)
	p("mode:          %s", map[bool]string{true: "copy-mode (a send leaves it first)", false: "normal"}[info.InMode])
	p("raw capture:   %s", saved)
	if scr.HasBox() {
		p("input box:     lines %d-%d", scr.BoxTop+1, scr.BoxBottom+1)
		if st := scr.Staged(); st != "" {
			p("staged text:   %q (a send clears it first)", st)
		} else {
			p("staged text:   none (dim placeholder ignored)")
		}
	} else {
		p("input box:     not on the pane (a menu or dialog holds the keyboard)")
	}
	if m, live, why := scr.Menu(); live {
		p("live menu:     %s %q — %s", m.Kind, m.Title, m.Question)
		for _, o := range m.Options {
			mark := "  "
			if o.Number == m.Cursor {
				mark = "❯ "
			}
			extra := ""
			if m.MultiSelect {
				extra = map[bool]string{true: "[✔] ", false: "[ ] "}[o.Checked]
			}
			desc := ""
			if o.Description != "" {
				desc = " — " + o.Description
			}
			p("               %s%d. %s%s%s", mark, o.Number, extra, o.Label, desc)
		}
	} else {
		p("live menu:     none (%s)", why)
	}
	p("last speaker:  %s", orNone(scr.LastSpeaker()))
	prompts := scr.Prompts()
	if len(prompts) > 3 {
		prompts = prompts[len(prompts)-3:]
	}
	for _, pr := range prompts {
		p("prompt above:  %q", clip(pr, 100))
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// historyLines is how far back `parley debug pane` looks.
const historyLines = 3000
