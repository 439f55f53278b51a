package web

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/tmux"
	"github.com/parleyhq/parley/internal/driver/tmux/ctl"
	"github.com/parleyhq/parley/internal/fanout"
	"github.com/parleyhq/parley/internal/router"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/sqlite"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/scripted"
)

// A tmux thread's terminal streams its pane's screen to a signed-in page,
// again each time it changes (here: keys typed through the endpoint, which
// arrive literally), and says "gone" when the pane ends. A thread whose
// agent has no terminal says so; nothing is shown without a sign-in.
func TestTerminalStreamsThePaneAndTypesIntoIt(t *testing.T) {
	testkit.NeedsTmux(t)
	ctx := context.Background()
	dir := t.TempDir()
	b := make([]byte, 4)
	rand.Read(b)
	socket := "parley-test-" + hex.EncodeToString(b)
	c, err := ctl.New("", socket, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.KillServer(context.Background()) })
	st, err := sqlite.Open(ctx, filepath.Join(dir, "parley.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	rt := router.New(st, fanout.New(nil), router.Options{
		Agents: []config.Agent{
			{ID: "term", Transport: "tmux", Command: "claude", Roots: []string{dir}, Options: map[string]string{tmux.OptSocket: socket}},
			{ID: "echo", Transport: "scripted", Command: "scripted", Roots: []string{dir}},
		},
		DefaultAgent: "echo",
		Drivers:      map[string]driver.Driver{"tmux": &tmux.Driver{}, "scripted": &scripted.Driver{}},
	})
	if err := rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(New(rt, st, fanout.New(nil), Options{Token: testToken, Roots: []string{dir}}))
	t.Cleanup(func() {
		srv.Close()
		rt.Close(context.Background())
		st.Close()
	})
	now := time.Now()
	for id, agent := range map[string]string{"t_term": "term", "t_echo": "echo"} {
		th := &chat.Thread{ID: chat.ThreadID(id), Agent: agent, Cwd: dir, State: chat.ThreadIdle, CreatedAt: now, UpdatedAt: now}
		if err := st.Commit(ctx, store.Batch{Thread: th}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.NewSession(ctx, ctl.NewSessionOptions{Name: tmux.SessionName("t_term"), Cwd: dir, Width: 80, Height: 10,
		Argv: []string{"sh", "-c", `printf 'known words\n'; exec cat`}}); err != nil {
		t.Fatal(err)
	}
	do := func(method, path, body string, signedIn bool) *http.Response {
		t.Helper()
		r, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if signedIn {
			r.Header.Set("Authorization", "Bearer "+testToken)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	status := func(method, path, body string, signedIn bool) int {
		resp := do(method, path, body, signedIn)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := status("GET", "/api/threads/t_term/terminal", "", false); got != http.StatusUnauthorized {
		t.Errorf("terminal without signing in: %d, want 401", got)
	}
	if got := status("POST", "/api/threads/t_term/terminal/keys", `{"text":"x"}`, false); got != http.StatusUnauthorized {
		t.Errorf("typing without signing in: %d, want 401", got)
	}
	if got := status("GET", "/api/threads/t_echo/terminal", "", true); got != http.StatusConflict {
		t.Errorf("a thread whose agent has no terminal: %d, want 409", got)
	}
	if got := status("POST", "/api/threads/t_term/terminal/keys", `{"text":""}`, true); got != http.StatusBadRequest {
		t.Errorf("typing nothing: %d, want 400", got)
	}

	resp := do("GET", "/api/threads/t_term/terminal", "", true)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("terminal: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := make(chan [2]string, 64)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		var ev string
		for sc.Scan() {
			line := sc.Text()
			if e, ok := strings.CutPrefix(line, "event: "); ok {
				ev = e
			} else if d, ok := strings.CutPrefix(line, "data: "); ok {
				events <- [2]string{ev, d}
			}
		}
	}()
	// take is the stream's next event; a stream silent for 15 s fails the test.
	take := func() ([2]string, bool) {
		select {
		case ev, ok := <-events:
			return ev, ok
		case <-time.After(15 * time.Second):
			t.Fatal("the stream said nothing for 15 s")
			return [2]string{}, false
		}
	}
	next := func(want string) driver.Screen {
		t.Helper()
		for ev, ok := take(); ok; ev, ok = take() {
			var sc driver.Screen
			if ev[0] == "screen" {
				if err := json.Unmarshal([]byte(ev[1]), &sc); err != nil {
					t.Fatal(err)
				}
				if strings.Contains(sc.Text, want) {
					return sc
				}
				continue
			}
			t.Fatalf("event %s %s while waiting for %q", ev[0], ev[1], want)
		}
		t.Fatalf("the stream ended before the screen showed %q", want)
		return driver.Screen{}
	}
	if sc := next("known words"); sc.Cols != 80 || sc.Rows != 10 {
		t.Errorf("screen size %d×%d, want 80×10", sc.Cols, sc.Rows)
	}
	if got := status("POST", "/api/threads/t_term/terminal/keys", `{"text":"typed from the page"}`, true); got != http.StatusNoContent {
		t.Fatalf("typing: %d, want 204", got)
	}
	next("typed from the page")
	if err := c.KillSession(ctx, tmux.SessionName("t_term")); err != nil {
		t.Fatal(err)
	}
	for ev, ok := take(); ok; ev, ok = take() {
		if ev[0] == "gone" {
			return
		}
	}
	t.Fatal("the stream ended without saying the pane is gone")
}
