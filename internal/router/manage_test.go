package router

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/hub"
)

func edit(title *string, archived *bool) *ThreadEdit {
	return &ThreadEdit{Title: title, Archived: archived}
}

func ptr[T any](v T) *T { return &v }

// A thread is renamed and archived through its lane (which owns its row), its
// log says so for every surface, and a message sent to an archived thread
// brings it back. Bad titles are refused with the reason.
func TestRenameAndArchive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, "", nil)
		defer g.close()
		ctx := context.Background()
		_, th, err := g.send("m1", "say hi")
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if err := g.r.Control(ctx, Control{Thread: th, Edit: edit(ptr("  Otter census  "), nil)}); err != nil {
			t.Fatalf("rename: %v", err)
		}
		if got := g.thread(th); got.Title != "Otter census" || got.Archived {
			t.Fatalf("after the rename: %+v", got)
		}
		if err := g.r.Control(ctx, Control{Thread: th, Edit: edit(nil, ptr(true))}); err != nil {
			t.Fatalf("archive: %v", err)
		}
		if got := g.thread(th); !got.Archived || got.Title != "Otter census" {
			t.Fatalf("after archiving: %+v", got)
		}
		if n := strings.Count(strings.Join(g.log(th), " "), chat.TypeThreadInfo); n != 2 {
			t.Errorf("thread_info events: %d, want 2: %v", n, g.log(th))
		}
		for _, bad := range []string{"", "   ", strings.Repeat("é", MaxTitleLen+1), "two\nlines"} {
			if err := g.r.Control(ctx, Control{Thread: th, Edit: edit(ptr(bad), nil)}); !errors.Is(err, chat.ErrBadInput) {
				t.Errorf("title %.20q: %v, want bad input", bad, err)
			}
		}
		if err := g.r.Control(ctx, Control{Thread: th, Edit: edit(ptr(strings.Repeat("é", MaxTitleLen)), nil)}); err != nil {
			t.Errorf("a title of %d characters: %v", MaxTitleLen, err)
		}
		if err := g.r.Control(ctx, Control{Thread: "nope", Edit: edit(ptr("x"), nil)}); !errors.Is(err, chat.ErrNotFound) {
			t.Errorf("rename of an unknown thread: %v, want not found", err)
		}
		// Writing to it un-archives it.
		if _, _, err := g.send("m2", "say again"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := g.thread(th); got.Archived {
			t.Errorf("archived after a message: %+v", got)
		}
	})
}

// Deleting a thread whose turn runs stops the turn and ends the agent's
// process, deletes the thread from the store, closes the views showing it
// with the reason, and leaves its route without a thread: the route's next
// message starts a new one.
func TestDeleteStopsTheTurnAndClosesViews(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, "", nil)
		defer g.close()
		ctx := context.Background()
		_, th, err := g.send("m1", "hang")
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		sub, shown, err := g.r.Subscribe(ctx, g.from, 64)
		if err != nil || shown == nil || shown.ID != th {
			t.Fatalf("subscribe: %v, %+v", err, shown)
		}
		if live := g.r.LiveSessions(); len(live) != 1 || !live[0].Busy {
			t.Fatalf("before the delete: %+v; want the busy session", live)
		}
		if err := g.r.DeleteThread(ctx, th); err != nil {
			t.Fatalf("delete: %v", err)
		}
		if g.drv.Closed() != 1 || len(g.r.LiveSessions()) != 0 {
			t.Errorf("after the delete: closed %d, live %+v; want the agent ended", g.drv.Closed(), g.r.LiveSessions())
		}
		if _, err := g.st.Thread(ctx, th); !errors.Is(err, chat.ErrNotFound) {
			t.Errorf("store after the delete: %v", err)
		}
		select {
		case <-sub.Done():
			if r := g.r.hub.Reason(sub); r != hub.ReasonDeleted {
				t.Errorf("view closed with %q, want %q", r, hub.ReasonDeleted)
			}
		default:
			t.Error("the view showing the thread is still open")
		}
		if id, _ := g.r.ThreadOf(ctx, g.from); id != "" {
			t.Errorf("route still shows %s", id)
		}
		if err := g.r.DeleteThread(ctx, th); !errors.Is(err, chat.ErrNotFound) {
			t.Errorf("delete twice: %v, want not found", err)
		}
		if err := g.r.Control(ctx, Control{Thread: th, Edit: edit(ptr("x"), nil)}); !errors.Is(err, chat.ErrNotFound) {
			t.Errorf("rename of the deleted thread: %v, want not found", err)
		}
		_, th2, err := g.send("m2", "say hi")
		if err != nil || th2 == th || th2 == "" {
			t.Fatalf("the route's next message: thread %q, %v; want a new thread", th2, err)
		}
		synctest.Wait()
		if !has(g.log(th2), "prompt_done:m2:end_turn") {
			t.Errorf("the new thread: %v", g.log(th2))
		}
	})
}

type ownsAll struct{ Remote }

func (ownsAll) Owns(id chat.ThreadID) bool { return strings.Contains(string(id), "@") }

// A thread another machine owns is not deleted here: the error says where.
func TestDeleteOfARemoteThreadIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, "", func(o *Options) { o.Remote = ownsAll{} })
		defer g.close()
		err := g.r.DeleteThread(context.Background(), "x@b")
		if !errors.Is(err, chat.ErrBadInput) || !strings.Contains(err.Error(), "another machine") {
			t.Errorf("delete x@b: %v; want refused, saying it is on another machine", err)
		}
	})
}
