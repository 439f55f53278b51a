package daemon_test

import (
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
)

// api calls the REST API with the daemon's token.
func (e *testEnv) api(method, path string, body, v any) int {
	e.t.Helper()
	return e.call(method, path, e.d.Token(), body, v)
}

type listed struct {
	Threads []chat.Thread `json:"threads"`
}

func ids(l listed) []string {
	var out []string
	for _, th := range l.Threads {
		out = append(out, string(th.ID))
	}
	return out
}

// Over a real daemon: a thread is renamed and archived over REST and both
// sockets showing it hear it at once; search finds its title and messages;
// deleting it closes both sockets with the reason; bad input is a 400 or 404
// with words, never a 500.
func TestManageThreadsOverREST(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, nil)
	a := e.dial("a", -1)
	a.WaitFor(0, 10*time.Second, chatsock.Type(chat.TypeReplayDone), "ready")
	a.Send(chatsock.Msg("m1", "say the otters sleep"))
	i := a.WaitFor(0, 10*time.Second, chatsock.PromptDone("m1", chat.StopEndTurn), "first turn")
	th := a.Get(i).Thread
	b := e.dial("b", -1)
	b.WaitFor(0, 10*time.Second, chatsock.Type(chat.TypeReplayDone), "ready")
	b.Send(map[string]any{"type": "open_thread", "thread_id": th})
	b.WaitFor(0, 10*time.Second, chatsock.PromptDone("m1", chat.StopEndTurn), "b shows the thread")

	var got struct {
		Thread chat.Thread `json:"thread"`
	}
	if code := e.api("PATCH", "/api/threads/"+string(th), map[string]any{"title": " Estuary census "}, &got); code != 200 || got.Thread.Title != "Estuary census" {
		t.Fatalf("rename: %d %+v", code, got.Thread)
	}
	for _, c := range []*chatsock.Conn{a, b} {
		c.WaitFor(0, 10*time.Second, chatsock.Field(chat.TypeThreadInfo, "title", "Estuary census"), "the new title, live")
	}
	var hits struct {
		Hits []struct {
			Thread chat.ThreadID `json:"thread"`
			Kind   string        `json:"kind"`
			Seq    int64         `json:"seq"`
		} `json:"hits"`
	}
	for _, c := range []struct{ q, kind string }{{"estuary", "title"}, {"otters", "user"}, {"otters", "agent"}} {
		code := e.api("GET", "/api/search?q="+c.q, nil, &hits)
		found := false
		for _, h := range hits.Hits {
			found = found || (h.Thread == th && h.Kind == c.kind)
		}
		if code != 200 || !found {
			t.Errorf("search %s: %d %+v; want the thread's %s", c.q, code, hits.Hits, c.kind)
		}
	}

	if code := e.api("PATCH", "/api/threads/"+string(th), map[string]any{"archived": true}, nil); code != 200 {
		t.Fatalf("archive: %d", code)
	}
	var list, archived listed
	e.api("GET", "/api/threads", nil, &list)
	e.api("GET", "/api/threads?archived=1", nil, &archived)
	if strings.Contains(strings.Join(ids(list), " "), string(th)) || strings.Join(ids(archived), " ") != string(th) {
		t.Errorf("after archiving: list %v, archived %v; want it only in the archived list", ids(list), ids(archived))
	}
	if code := e.api("GET", "/api/threads/"+string(th), nil, nil); code != 200 {
		t.Errorf("an archived thread reads: %d", code)
	}

	var bad struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	for _, c := range []struct {
		method, path string
		body         any
		want         int
	}{
		{"PATCH", "/api/threads/" + string(th), map[string]any{"title": "  "}, 400},
		{"PATCH", "/api/threads/" + string(th), map[string]any{"title": strings.Repeat("x", 121)}, 400},
		{"PATCH", "/api/threads/" + string(th), map[string]any{}, 400},
		{"PATCH", "/api/threads/t_nope", map[string]any{"title": "x"}, 404},
		{"DELETE", "/api/threads/t_nope", nil, 404},
		{"GET", "/api/search?q=%22", nil, 400},
		{"GET", "/api/search?q=", nil, 400},
	} {
		bad.Error.Message = ""
		if code := e.api(c.method, c.path, c.body, &bad); code != c.want || bad.Error.Message == "" {
			t.Errorf("%s %s %v: %d %q; want %d with a reason", c.method, c.path, c.body, code, bad.Error.Message, c.want)
		}
	}

	var del struct {
		Deleted bool   `json:"deleted"`
		Note    string `json:"note"`
	}
	if code := e.api("DELETE", "/api/threads/"+string(th), nil, &del); code != 200 || !del.Deleted || !strings.Contains(del.Note, "left on disk") {
		t.Fatalf("delete: %d %+v", code, del)
	}
	for name, c := range map[string]*chatsock.Conn{"a": a, "b": b} {
		if err := c.WaitEnd(10 * time.Second); err == nil || !strings.Contains(err.Error(), "the thread was deleted") {
			t.Errorf("socket %s after the delete: %v; want closed saying the thread was deleted", name, err)
		}
	}
	if code := e.api("GET", "/api/threads/"+string(th), nil, nil); code != 404 {
		t.Errorf("the deleted thread reads: %d, want 404", code)
	}
	if e.api("GET", "/api/search?q=otters", nil, &hits); len(hits.Hits) != 0 {
		t.Errorf("search after the delete: %+v", hits.Hits)
	}
}

// The socket's edit_thread and delete_thread are the REST calls' twins (one
// path for the dashboard and parley chat): the sender gets done (or an error)
// naming its ref, every socket showing the thread hears thread_info, and a
// delete closes the views showing it saying why.
func TestManageThreadsOverTheSocket(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, nil)
	a := e.dial("a", -1)
	a.WaitFor(0, 10*time.Second, chatsock.Type(chat.TypeReplayDone), "ready")
	a.Send(chatsock.Msg("m1", "say the herons fish"))
	i := a.WaitFor(0, 10*time.Second, chatsock.PromptDone("m1", chat.StopEndTurn), "first turn")
	th := a.Get(i).Thread
	b := e.dial("b", -1)
	b.WaitFor(0, 10*time.Second, chatsock.Type(chat.TypeReplayDone), "ready")
	b.Send(map[string]any{"type": "open_thread", "thread_id": th})
	b.WaitFor(0, 10*time.Second, chatsock.PromptDone("m1", chat.StopEndTurn), "b shows the thread")

	a.Send(map[string]any{"type": "edit_thread", "ref": "r1", "title": " Heron count "})
	a.WaitFor(0, 10*time.Second, chatsock.Field(chat.TypeDone, "ref", "r1"), "done for the rename")
	for _, c := range []*chatsock.Conn{a, b} {
		c.WaitFor(0, 10*time.Second, chatsock.Field(chat.TypeThreadInfo, "title", "Heron count"), "the new title, live")
	}
	a.Send(map[string]any{"type": "edit_thread", "ref": "r2", "title": "  "})
	n := a.WaitFor(0, 10*time.Second, chatsock.Field(chat.TypeError, "ref", "r2"), "the refusal names its ref")
	if msg, _ := chatsock.FieldOf(a.Get(n), "message").(string); !strings.Contains(msg, "empty") {
		t.Errorf("a blank title's refusal: %q; want why", msg)
	}
	b.Send(map[string]any{"type": "edit_thread", "ref": "r3", "thread_id": th, "archived": true})
	b.WaitFor(0, 10*time.Second, chatsock.Field(chat.TypeDone, "ref", "r3"), "done for the archive")
	a.WaitFor(0, 10*time.Second, chatsock.Field(chat.TypeThreadInfo, "archived", true), "archived, live")
	var got struct {
		Thread chat.Thread `json:"thread"`
	}
	if e.api("GET", "/api/threads/"+string(th), nil, &got); got.Thread.Title != "Heron count" || !got.Thread.Archived {
		t.Errorf("the thread after the socket's edits: %+v", got.Thread)
	}

	c := e.dial("c", -1)
	c.WaitFor(0, 10*time.Second, chatsock.Type(chat.TypeReplayDone), "ready")
	c.Send(map[string]any{"type": "delete_thread", "ref": "r4", "thread_id": "t_nope"})
	c.WaitFor(0, 10*time.Second, chatsock.Field(chat.TypeError, "ref", "r4"), "an unknown thread is refused")
	c.Send(map[string]any{"type": "delete_thread", "ref": "r5", "thread_id": th})
	n = c.WaitFor(0, 10*time.Second, chatsock.Field(chat.TypeDone, "ref", "r5"), "done for the delete")
	if note, _ := chatsock.FieldOf(c.Get(n), "note").(string); !strings.Contains(note, "left on disk") {
		t.Errorf("the delete's note: %q", note)
	}
	for name, s := range map[string]*chatsock.Conn{"a": a, "b": b} {
		if err := s.WaitEnd(10 * time.Second); err == nil || !strings.Contains(err.Error(), "the thread was deleted") {
			t.Errorf("socket %s after the delete: %v; want closed saying the thread was deleted", name, err)
		}
	}
	if code := e.api("GET", "/api/threads/"+string(th), nil, nil); code != 404 {
		t.Errorf("the deleted thread reads: %d, want 404", code)
	}
}
