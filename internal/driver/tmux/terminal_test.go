package tmux

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/tmux/ctl"
	"github.com/parleyhq/parley/internal/testkit"
)

// A thread's terminal is its session's pane, as Start names it: the screen
// comes with its colours, size and cursor, and text typed arrives literally
// (key names are not looked up: "Enter" is five letters). Once the session
// is gone the terminal says the agent is not running.
func TestTerminalShowsThePaneAndTypesLiterally(t *testing.T) {
	testkit.NeedsTmux(t)
	socket := "parley-test-" + randomName(t)
	c, err := ctl.New("", socket, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killServer(t, c) })
	ctx := context.Background()
	const thread = chat.ThreadID("t_term")
	// A pane that prints red words, then echoes what is typed (cat on a tty).
	if err := c.NewSession(ctx, ctl.NewSessionOptions{Name: SessionName(thread), Cwd: t.TempDir(), Width: 70, Height: 12,
		Argv: []string{"sh", "-c", `printf '\033[31mred words\033[0m\n'; exec cat`}}); err != nil {
		t.Fatal(err)
	}
	d := &Driver{Socket: socket}
	if _, err := d.Terminal(ctx, "t_other", nil); !errors.Is(err, driver.ErrNotRunning) {
		t.Fatalf("another thread's terminal: %v, want ErrNotRunning", err)
	}
	term, err := d.Terminal(ctx, thread, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	var sc driver.Screen
	screen := func() driver.Screen {
		if sc, err = term.Screen(ctx); err != nil {
			t.Fatal(err)
		}
		return sc
	}
	testkit.Eventually(t, 10*time.Second, func() bool { return strings.Contains(screen().Text, "red words") }, "the pane's words: %q", testkit.Later(func() any { return sc.Text }))
	if !strings.Contains(sc.Text, "\x1b[31mred words") || sc.Cols != 70 || sc.Rows != 12 || sc.CursorY != 1 || sc.CursorX != 0 {
		t.Errorf("screen: %+v, want the words in red, 70×12, the cursor at the start of row 1", sc)
	}
	if err := term.Type(ctx, "typed Enter $(x)"); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, func() bool { return strings.Contains(screen().Text, "typed Enter $(x)") }, "the typed text: %q", testkit.Later(func() any { return sc.Text }))
	if sc.CursorY != 1 || sc.CursorX != len("typed Enter $(x)") {
		t.Errorf("cursor at %d,%d after typing, want %d,1: no key was pressed", sc.CursorX, sc.CursorY, len("typed Enter $(x)"))
	}

	// The adopt option names the session whatever the thread is.
	adopted, err := d.Terminal(ctx, "t_any", map[string]string{OptAdopt: SessionName(thread)})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := adopted.Screen(ctx); err != nil || !strings.Contains(got.Text, "red words") {
		t.Errorf("the adopted session's screen: %q, %v", got.Text, err)
	}

	if err := c.KillSession(ctx, SessionName(thread)); err != nil {
		t.Fatal(err)
	}
	if _, err := term.Screen(ctx); !errors.Is(err, driver.ErrNotRunning) {
		t.Errorf("screen of a killed session: %v, want ErrNotRunning", err)
	}
	if err := term.Type(ctx, "x"); !errors.Is(err, driver.ErrNotRunning) {
		t.Errorf("typing into a killed session: %v, want ErrNotRunning", err)
	}
}
