package daemon_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
)

// sseEvent is one server-sent event.
type sseEvent struct{ name, data string }

// openChanges opens /api/threads/changes and returns its events as they come.
func openChanges(t *testing.T, e *testEnv, token string) (*http.Response, <-chan sseEvent) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", e.url()+"/api/threads/changes", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	out := make(chan sseEvent, 64)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data = strings.TrimPrefix(line, "data: ")
			case line == "" && ev.name != "":
				out <- ev
				ev = sseEvent{}
			}
		}
	}()
	return resp, out
}

// The change stream names a thread when its log grows (a new thread, a turn),
// so a thread list can refetch instead of polling; it needs the token.
func TestChangeStreamNamesThreadsThatChanged(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, nil)
	if resp, _ := openChanges(t, e, ""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without the token: %d, want 401", resp.StatusCode)
	}
	resp, events := openChanges(t, e, e.d.Token())
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("change stream: %d %q, want 200 text/event-stream", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	next := func(what string) sseEvent {
		t.Helper()
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("the change stream ended while waiting for %s", what)
			}
			return ev
		case <-time.After(20 * time.Second):
			t.Fatalf("no change event: %s", what)
		}
		return sseEvent{}
	}
	if ev := next("ready"); ev.name != "ready" {
		t.Fatalf("first event: %+v, want ready", ev)
	}
	// Wait until the named thread is reported; other threads may come first.
	sawThread := func(id chat.ThreadID, what string) {
		t.Helper()
		for {
			ev := next(what)
			if ev.name != "threads" {
				t.Fatalf("event %+v, want threads", ev)
			}
			var ids []chat.ThreadID
			if err := json.Unmarshal([]byte(ev.data), &ids); err != nil {
				t.Fatalf("threads event data %q: %v", ev.data, err)
			}
			if slices.Contains(ids, id) {
				return
			}
		}
	}
	a := e.ready("a")
	a.Send(chatsock.Msg("m1", "say hello"))
	i := a.WaitFor(0, 10*time.Second, chatsock.PromptDone("m1", chat.StopEndTurn), "first turn")
	first := a.Get(i).Thread
	sawThread(first, "the new thread")

	// A second thread on another chat, then a turn on the first again: each
	// is named when it changes.
	b := e.ready("b")
	b.Send(chatsock.Msg("m2", "say hi"))
	j := b.WaitFor(0, 10*time.Second, chatsock.PromptDone("m2", chat.StopEndTurn), "second thread's turn")
	second := b.Get(j).Thread
	if second == first {
		t.Fatalf("chat b got chat a's thread %s", first)
	}
	sawThread(second, "the second thread")
	a.Send(chatsock.Msg("m3", "say again"))
	a.WaitFor(i+1, 10*time.Second, chatsock.PromptDone("m3", chat.StopEndTurn), "first thread's second turn")
	sawThread(first, "the first thread's second turn")
}
