package tui_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/tmuxterm"
)

// TestSendLeavesChatWhereItIs: a script's parley send (--new, --thread, or
// plain) in the terminal whose parley chat is open never moves that chat to
// another thread; a plain send goes to the thread the chat shows, and the
// chat shows its answer.
func TestSendLeavesChatWhereItIs(t *testing.T) {
	testkit.NeedsTmux(t)
	bin := testkit.ParleyBinary(t)
	d, _ := startDaemon(t)
	server := "http://" + d.Addr()
	const chatID = "e2e-send-chat"
	tm := tmuxterm.Start(t, []string{"NO_COLOR=1"}, bin, "chat", "--server", server, "--token", d.Token(), "--chat", chatID)
	t.Cleanup(func() { t.Logf("the screen at the end:\n%s", tm.Screen()) })
	tm.WaitScreen("online", tmuxterm.Has("│ online"))
	tm.TypeLine("say in the chat's own thread")
	tm.WaitScreen("the answer", tmuxterm.Has("  in the chat's own thread"))

	api := client.API{Server: server, Token: d.Token()}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mine, err := api.RouteThread(ctx, chat.RouteKey{Channel: "tui", Chat: chatID})
	if err != nil || mine == "" {
		t.Fatalf("the chat's thread: %q, %v", mine, err)
	}
	send := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, bin, append([]string{"send", "--server", server, "--token", d.Token(), "--chat", chatID}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("parley send %q: %v\n%s", args, err, out)
		}
		return string(out)
	}
	stays := func(after string) {
		t.Helper()
		if got, err := api.RouteThread(ctx, chat.RouteKey{Channel: "tui", Chat: chatID}); err != nil || got != mine {
			t.Fatalf("after %s the chat's route shows %q (%v), want its own thread %s", after, got, err, mine)
		}
	}

	// A cron job starts a thread of its own: the chat does not follow it.
	if out := send("--new", "say from cron in a new thread"); !strings.Contains(out, "from cron in a new thread") {
		t.Fatalf("send --new printed %q", out)
	}
	stays("send --new")
	ths, err := api.Threads(ctx)
	if err != nil || len(ths) != 2 {
		t.Fatalf("threads: %v, %v; want two", ths, err)
	}
	other := ths[0].ID
	if other == mine {
		other = ths[1].ID
	}
	// It continues that thread by id: still not the chat's business.
	send("--thread", string(other), "say again in the cron thread")
	stays("send --thread")
	// A plain send goes where the chat is, and the chat shows the answer.
	send("say to the chat's thread")
	stays("a plain send")
	tm.WaitScreen("the plain send's answer in the chat", tmuxterm.Has("  to the chat's thread"))
	// What the person types next still goes to their thread.
	tm.TypeLine("say typed after the sends")
	s := tm.WaitScreen("the answer", tmuxterm.Has("  typed after the sends"))
	for _, gone := range []string{"from cron in a new thread", "again in the cron thread"} {
		if strings.Contains(s, gone) {
			t.Errorf("the chat shows %q, from the cron thread:\n%s", gone, s)
		}
	}
}

// TestPickerKeysMatchTheList: with more threads than the picker shows, the
// digits on screen are the keys: scrolled down, "1." opens the thread
// labelled 1 in view, not the first of the whole list.
func TestPickerKeysMatchTheList(t *testing.T) {
	testkit.NeedsTmux(t)
	bin := testkit.ParleyBinary(t)
	d, _ := startDaemon(t)
	server := "http://" + d.Addr()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := 1; i <= 14; i++ {
		out, err := exec.CommandContext(ctx, bin, "send", "--server", server, "--token", d.Token(), "--chat", "e2e-picker-seed",
			"--new", fmt.Sprintf("say thread number %d", i)).CombinedOutput()
		if err != nil {
			t.Fatalf("seed %d: %v\n%s", i, err, out)
		}
	}
	tm := tmuxterm.Start(t, []string{"NO_COLOR=1"}, bin, "chat", "--server", server, "--token", d.Token(), "--chat", "e2e-picker")
	t.Cleanup(func() { t.Logf("the screen at the end:\n%s", tm.Screen()) })
	tm.WaitScreen("online", tmuxterm.Has("│ online"))
	tm.Keys("C-t")
	tm.WaitScreen("the picker with its threads", tmuxterm.Has("8. echo · "))
	for i := 0; i < 12; i++ {
		tm.Keys("Down")
	}
	// Newest first: the 12th thread is the third one made.
	s := tm.WaitScreen("the cursor on the 12th thread", tmuxterm.Has("› 9. echo · say thread number 3 · "))
	var title string
	for _, l := range strings.Split(s, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimLeft(l, " ›"), "1. echo · "); ok {
			title, _, _ = strings.Cut(rest, " · ")
		}
	}
	if title == "" || strings.Contains(s, "0. + new thread here") {
		t.Fatalf("scrolled down 12, want the rows in view numbered from 1 and the first rows gone:\n%s", s)
	}
	tm.Keys("1")
	tm.WaitScreen("the thread labelled 1 opened", tmuxterm.Has(" "+title+" "))
}
