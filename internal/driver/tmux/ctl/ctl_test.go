package ctl

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/testkit"
)

func TestValidName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		want bool
	}{
		{"parley", true}, {"parley-test-1a2b", true}, {"a_b", true},
		{"", false}, {"-t", false}, {"a:b", false}, {"a.b", false}, {"$1", false}, {"%1", false},
		{"a b", false}, {"a;rm", false}, {strings.Repeat("x", 65), false},
	}
	for _, tt := range tests {
		if got := ValidName(tt.name); got != tt.want {
			t.Errorf("ValidName(%q): got %v, want %v", tt.name, got, tt.want)
		}
	}
}

func newClient(t *testing.T) *Client {
	t.Helper()
	testkit.NeedsTmux(t)
	b := make([]byte, 4)
	rand.Read(b)
	c, err := New("", "parley-test-"+hex.EncodeToString(b), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.KillServer(context.Background()) })
	return c
}

// Control mode reports output as it happens, and paste keeps newlines as text.
func TestControlAndPaste(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	ctx := context.Background()
	if err := c.NewSession(ctx, NewSessionOptions{Name: "s", Argv: []string{"cat"}}); err != nil {
		t.Fatal(err)
	}
	ctl, err := c.Attach(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	changed := ctl.Changed()
	if err := c.Paste(ctx, "s", "buf", "one\ntwo; $(not run)"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no output notification after a paste")
	}
	testkit.Eventually(t, 5*time.Second, func() bool {
		out, err := c.Capture(ctx, "s", 0)
		return err == nil && strings.Contains(out, "one") && strings.Contains(out, "two; $(not run)")
	}, "pasted text not on the pane")
	// The same reads through the control client, without a process.
	out, err := ctl.Command(ctx, CaptureArgs("s", HistoryAll)...)
	if err != nil || !strings.Contains(out, "two; $(not run)") {
		t.Fatalf("Command(capture-pane): got %q %v", out, err)
	}
	pout, err := ctl.Command(ctx, PaneArgs("s")...)
	if pi, perr := ParsePane(pout); err != nil || perr != nil || pi.CurrentCommand != "cat" {
		t.Fatalf("Command(display-message): got %q %v %v", pout, err, perr)
	}
	if _, err := ctl.Command(ctx, "capture-pane", "-p", "-t", "nosuch"); !errors.Is(err, ErrNoSession) {
		t.Errorf("Command on a missing pane: got %v, want ErrNoSession", err)
	}
	info, err := c.Pane(ctx, "s")
	if err != nil || info.CurrentCommand != "cat" || info.Width != 120 || info.Height != 40 {
		t.Fatalf("Pane: got %+v %v, want cat at 120x40", info, err)
	}
	if _, err := c.Run(ctx, "copy-mode", "-t", "s"); err != nil {
		t.Fatal(err)
	}
	if err := c.ExitMode(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if info, _ := c.Pane(ctx, "s"); info.InMode {
		t.Error("still in copy-mode after ExitMode")
	}
	if err := c.KillSession(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctl.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("control client did not end with its session")
	}
	if ok, err := c.HasSession(ctx, "s"); ok || err != nil {
		t.Errorf("HasSession after kill: got %v %v, want false nil", ok, err)
	}
	if _, err := c.Capture(ctx, "s", 0); !errors.Is(err, ErrNoSession) {
		t.Errorf("Capture of a gone session: got %v, want ErrNoSession", err)
	}
}

// Attach returns only once tmux lists the control client: output printed
// right after it is heard (a CI run under load lost a paste's echo when
// Attach returned before the client was attached).
func TestAttachReturnsOnceAttached(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	ctx := context.Background()
	if err := c.NewSession(ctx, NewSessionOptions{Name: "s", Argv: []string{"cat"}}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		ctl, err := c.Attach(ctx, "s")
		if err != nil {
			t.Fatal(err)
		}
		// The client closed before may still be listed a moment: look for
		// this one's own process.
		out, err := c.Run(ctx, "list-clients", "-t", "s", "-F", "#{client_pid} #{client_control_mode}")
		if mine := fmt.Sprint(ctl.cmd.Process.Pid, " 1"); err != nil || !slices.Contains(strings.Split(strings.TrimSpace(out), "\n"), mine) {
			t.Fatalf("attach %d: list-clients right after Attach: got %q %v, want %q (this control client)", i, out, err, mine)
		}
		if err := ctl.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Attach(ctx, "nosuch"); err == nil {
		t.Error("Attach to a missing session: got no error")
	}
}

func TestQuote(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"%0", "%0"}, {"=name", "=name"}, {"-", "-"}, {"", "''"},
		{"#{pane_id}", "'#{pane_id}'"}, {"a b", "'a b'"}, {"it's", `'it'\''s'`}, {"x;kill-server", "'x;kill-server'"},
	}
	for _, tt := range tests {
		if got := Quote(tt.in); got != tt.want {
			t.Errorf("Quote(%q): got %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestRejectsBadNames(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	ctx := context.Background()
	if err := c.NewSession(ctx, NewSessionOptions{Name: "x;y", Argv: []string{"cat"}}); err == nil {
		t.Error("NewSession with a bad name: got nil")
	}
	if _, err := c.Attach(ctx, "-t"); err == nil {
		t.Error("Attach with a bad name: got nil")
	}
	if err := c.Paste(ctx, "s", "a b", "x"); err == nil {
		t.Error("Paste with a bad buffer name: got nil")
	}
	if _, err := New("", "a:b", nil); err == nil {
		t.Error("New with a bad socket: got nil")
	}
}

// A session named exactly is never another whose name it begins: with "foo"
// gone and "foobar" there, nothing aimed at "foo" reads or types into foobar.
func TestSessionTargetIsExact(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	ctx := context.Background()
	for _, n := range []string{"foo", "foobar"} {
		if err := c.NewSession(ctx, NewSessionOptions{Name: n, Argv: []string{"cat", "-v"}}); err != nil {
			t.Fatal(err)
		}
	}
	fooID, err := c.PaneID(ctx, "foo")
	if err != nil {
		t.Fatal(err)
	}
	barID, err := c.PaneID(ctx, "foobar")
	if err != nil || barID == fooID {
		t.Fatalf("PaneID(foobar): got %q %v, want a pane other than foo's %q", barID, err, fooID)
	}
	if err := c.KillSession(ctx, "foo"); err != nil {
		t.Fatal(err)
	}
	before, err := c.Capture(ctx, SessionTarget("foobar"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := c.HasSession(ctx, "foo"); ok || err != nil {
		t.Errorf("HasSession(foo): got %v %v, want false nil", ok, err)
	}
	if id, err := c.PaneID(ctx, "foo"); !errors.Is(err, ErrNoSession) {
		t.Errorf("PaneID(foo): got %q %v, want ErrNoSession", id, err)
	}
	if _, err := c.Pane(ctx, SessionTarget("foo")); !errors.Is(err, ErrNoSession) {
		t.Errorf("Pane(=foo:): got %v, want ErrNoSession", err)
	}
	if _, err := c.Capture(ctx, SessionTarget("foo"), 0); !errors.Is(err, ErrNoSession) {
		t.Errorf("Capture(=foo:): got %v, want ErrNoSession", err)
	}
	for _, target := range []string{SessionTarget("foo"), fooID} {
		if err := c.SendLiteral(ctx, target, "typed-at-foo"); !errors.Is(err, ErrNoSession) {
			t.Errorf("SendLiteral(%s): got %v, want ErrNoSession", target, err)
		}
		if err := c.Paste(ctx, target, "buf", "pasted-at-foo"); !errors.Is(err, ErrNoSession) {
			t.Errorf("Paste(%s): got %v, want ErrNoSession", target, err)
		}
		if err := c.SendKeys(ctx, target, "Escape", "C-m"); !errors.Is(err, ErrNoSession) {
			t.Errorf("SendKeys(%s): got %v, want ErrNoSession", target, err)
		}
	}
	// foobar got nothing (cat -v would echo it), and still answers to its own name.
	if err := c.SendLiteral(ctx, barID, "typed-at-foobar"); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, func() bool {
		out, err := c.Capture(ctx, SessionTarget("foobar"), 0)
		return err == nil && strings.Contains(out, "typed-at-foobar")
	}, "foobar's pane never showed its own typing")
	after, _ := c.Capture(ctx, SessionTarget("foobar"), 0)
	if strings.TrimRight(strings.Replace(after, "typed-at-foobar", "", 1), "\n ") != strings.TrimRight(before, "\n ") {
		t.Errorf("foobar's pane changed by what was aimed at foo:\nbefore %q\nafter  %q", before, after)
	}
}

// A start directory that is not an absolute, existing folder is refused
// before tmux runs anything: env -C would fail inside the pane, out of sight.
func TestStartArgvRefusesBadDirs(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"relative", filepath.Join(t.TempDir(), "missing"), file} {
		if argv, err := StartArgv(dir, []string{"cat"}); err == nil {
			t.Errorf("StartArgv(%q): got %q, want an error", dir, argv)
		}
	}
	dir := t.TempDir()
	got, err := StartArgv(dir, []string{"cat", "-v"})
	if err != nil || !slices.Equal(got, []string{"env", "-C", dir, "--", "cat", "-v"}) {
		t.Errorf("StartArgv(%q): got %q, %v", dir, got, err)
	}
}
