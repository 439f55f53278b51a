package daemon_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/tmux"
	"github.com/parleyhq/parley/internal/driver/tmux/ctl"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/scripted"
)

// At a cluster's hub, a node's tmux thread's Terminal shows the pane as
// the node reads it, again when it changes; keys typed at the hub go
// through the node into the pane; a thread whose agent has no terminal
// says so in the node's words.
func TestNodeThreadTerminalAtTheHub(t *testing.T) {
	testkit.NeedsTmux(t)
	b4 := make([]byte, 4)
	rand.Read(b4)
	socket := "parley-test-" + hex.EncodeToString(b4)
	c, err := ctl.New("", socket, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.KillServer(context.Background()) })

	hub := startHub(t)
	addr := hub.d.ClusterHub().Addr()
	// b has an agent in tmux whose pane is the session "view" (started
	// below, as a person's own would be).
	b := startWith(t, &scripted.Driver{}, func(cfg *config.Config) {
		cfg.Cluster.Node, cfg.Cluster.Hub = "b", addr
		if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
			t.Fatal(err)
		}
		joinAs(t, hub, cfg.DataDir, "b")
		cfg.Agents = append(cfg.Agents, config.Agent{ID: "term", Transport: config.TransportTmux, Command: "sh",
			Options: map[string]string{tmux.OptSocket: socket, tmux.OptSession: "view"}})
	})
	b.stop()
	b.opt.Drivers = map[string]driver.Driver{config.TransportStream: &scripted.Driver{}, config.TransportTmux: &tmux.Driver{}}
	b.start()
	waitMachine(t, hub, "b", true)
	if err := c.NewSession(t.Context(), ctl.NewSessionOptions{Name: "view", Cwd: b.root, Width: 80, Height: 10,
		Argv: []string{"sh", "-c", `printf 'known words\n'; exec cat`}}); err != nil {
		t.Fatal(err)
	}
	route := chat.RouteKey{Channel: "rest", Chat: "test"}
	own, err := b.d.Router().NewThread(t.Context(), route, "term", b.root)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := b.d.Router().NewThread(t.Context(), chat.RouteKey{Channel: "rest", Chat: "plain"}, "echo", b.root)
	if err != nil {
		t.Fatal(err)
	}
	th := own + "@b"
	testkit.Eventually(t, 20*time.Second, func() bool {
		return hub.api("GET", "/api/threads/"+string(th), nil, nil) == 200 && hub.api("GET", "/api/threads/"+string(plain)+"@b", nil, nil) == 200
	}, "b's threads at the hub")

	req, _ := http.NewRequestWithContext(t.Context(), "GET", hub.url()+"/api/threads/"+string(th)+"/terminal", nil)
	req.Header.Set("Authorization", "Bearer "+hub.d.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("the terminal of b's thread at the hub: %s", resp.Status)
	}
	screens := make(chan driver.Screen, 16)
	go func() {
		defer close(screens)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		event := ""
		for sc.Scan() {
			line := sc.Text()
			if e, ok := strings.CutPrefix(line, "event: "); ok {
				event = e
			} else if d, ok := strings.CutPrefix(line, "data: "); ok && event == "screen" {
				var s driver.Screen
				if json.Unmarshal([]byte(d), &s) == nil {
					screens <- s
				}
			}
		}
	}()
	waitScreen := func(what, text string) {
		t.Helper()
		for {
			select {
			case s, ok := <-screens:
				if !ok {
					t.Fatalf("the stream ended before %s", what)
				}
				if strings.Contains(s.Text, text) {
					if s.Cols != 80 || s.Rows != 10 {
						t.Fatalf("the screen is %dx%d, want 80x10", s.Cols, s.Rows)
					}
					return
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("no screen with %s", what)
			}
		}
	}
	waitScreen("the pane's text", "known words")

	var bad apiError
	if code := hub.api("POST", "/api/threads/"+string(th)+"/terminal/keys", map[string]any{"text": "typed at the hub"}, nil); code != 204 {
		t.Fatalf("typing at the hub: %d", code)
	}
	waitScreen("the keys typed at the hub", "typed at the hub")

	if code := hub.api("GET", "/api/threads/"+string(plain)+"@b/terminal", nil, &bad); code != 409 ||
		!strings.Contains(bad.Error.Message, "machine b") || !strings.Contains(bad.Error.Message, "does not run in a terminal") {
		t.Fatalf("a thread without a terminal at the hub: %d %+v", code, bad)
	}
}
