package tui_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/sqlite"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/scriptd"
	"github.com/parleyhq/parley/internal/testkit/tmuxterm"
)

// TestManageThreadInTmux: `parley chat` shows that a thread's agent is gone
// and moves it (Ctrl+E) to another agent, which gets the earlier messages the
// person chose with the next message; then renames, archives and deletes the
// thread, all on the socket.
func TestManageThreadInTmux(t *testing.T) {
	testkit.NeedsTmux(t)
	bin := testkit.ParleyBinary(t)
	const chatID = "e2e-manage"
	r := scriptd.Start(t, func(cfg *config.Config) {
		// A thread of an agent the config no longer has, on this terminal's
		// route, with one message in its log.
		ctx := context.Background()
		if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
			t.Fatal(err)
		}
		st, err := sqlite.Open(ctx, filepath.Join(cfg.DataDir, "parley.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		now := time.Now().Add(-time.Hour)
		th := chat.Thread{ID: "t_gone", Agent: "gone", Cwd: cfg.Roots[0], Title: "heron watch", State: chat.ThreadUnloaded, CreatedAt: now, UpdatedAt: now, LastSeq: 1}
		ev, err := chat.NewEvent(th.ID, chat.UserMessage{MessageID: "m_old", Text: "remember the heron at the weir", From: chat.RouteKey{Channel: "tui", Chat: chatID}}, now)
		if err != nil {
			t.Fatal(err)
		}
		ev.Seq = 1
		if err := st.Commit(ctx, store.Batch{Thread: &th, Events: []chat.Event{ev}}); err != nil {
			t.Fatal(err)
		}
		if err := st.AttachRoute(ctx, chat.RouteKey{Channel: "tui", Chat: chatID}, th.ID); err != nil {
			t.Fatal(err)
		}
	})
	d := r.D()
	tm := tmuxterm.Start(t, []string{"NO_COLOR=1"}, bin, "chat", "--server", "http://"+d.Addr(), "--token", d.Token(), "--chat", chatID)
	t.Cleanup(func() { t.Logf("the screen at the end:\n%s", tm.Screen()) })
	tm.WaitScreen("the thread, saying its agent is gone", tmuxterm.Has("remember the heron at the weir", "the agent gone is not configured: ^E moves"))

	step(t, "move", func(t *testing.T) {
		tm.T = t
		tm.Keys("C-e")
		tm.WaitScreen("the move, saying what the new agent knows", tmuxterm.Has("Move to ‹echo›", "the last 10 messages", "does not have the old agent's"))
		tm.Keys("Enter")
		tm.WaitScreen("moved, said in the transcript", tmuxterm.Has("Moved from gone to echo", "parley │ echo │"))
		tm.TypeLine("what was I watching?")
		// The scripted agent echoes its whole prompt: the earlier message came with it.
		tm.WaitScreen("the new agent got the earlier message", func(s string) bool {
			return strings.Contains(s, `moved to you from the agent "gone"`) && strings.Contains(s, "Person: remember the heron at the weir") && strings.Contains(s, "│ idle │")
		})
	})
	step(t, "rename", func(t *testing.T) {
		tm.T = t
		tm.Keys("C-e")
		tm.WaitScreen("the menu", tmuxterm.Has("r rename · a archive · d delete"))
		tm.Keys("r")
		tm.WaitScreen("the title to edit", tmuxterm.Has("Title: heron watch"))
		for range len("heron watch") {
			tm.Keys("BSpace")
		}
		tm.TypeLine("Weir log")
		tm.WaitScreen("the new title in the status line", tmuxterm.Has("parley │ echo │ Weir log"))
	})
	step(t, "archive", func(t *testing.T) {
		tm.T = t
		tm.Keys("C-e")
		tm.WaitScreen("the menu", tmuxterm.Has("a archive"))
		tm.Keys("a")
		tm.WaitScreen("done: the menu closes", func(s string) bool { return strings.Contains(s, "\ndone") && !strings.Contains(s, "r rename") })
		arch, err := client.API{Server: "http://" + d.Addr(), Token: d.Token()}.ArchivedThreads(context.Background())
		if err != nil || len(arch) != 1 || arch[0].ID != "t_gone" {
			t.Errorf("archived threads: %+v, %v; want the thread", arch, err)
		}
	})
	step(t, "delete", func(t *testing.T) {
		tm.T = t
		tm.Keys("C-e")
		tm.WaitScreen("the menu", tmuxterm.Has("d delete"))
		tm.Keys("d")
		tm.WaitScreen("what a delete does", tmuxterm.Has("deleted from parley", "y delete"))
		tm.Keys("y")
		tm.WaitScreen("deleted", tmuxterm.Has("thread deleted"))
		_, err := client.API{Server: "http://" + d.Addr(), Token: d.Token()}.Usage(context.Background(), "t_gone")
		if !errors.Is(err, chat.ErrNotFound) && (err == nil || !strings.Contains(err.Error(), "404")) {
			t.Errorf("the deleted thread reads: %v, want not found", err)
		}
	})
}
