package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/daemon"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/testkit/scripted"
)

// testEnv is a real daemon (real SQLite, real sockets) over the scripted agent.
type testEnv struct {
	t    testing.TB
	d    *daemon.Daemon
	drv  *scripted.Driver
	root string
	cfg  config.Config
}

// startDaemon starts a daemon whose one agent ("echo") is the scripted driver.
// mutate may change the config before it is validated.
func startDaemon(t testing.TB, mutate func(*config.Config)) *testEnv {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(root, "data")
	work := filepath.Join(root, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(data, work)
	if mutate != nil {
		mutate(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	drv := &scripted.Driver{}
	d, err := daemon.Start(context.Background(), cfg, daemon.Options{Drivers: map[string]driver.Driver{"stream": drv}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := d.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return &testEnv{t: t, d: d, drv: drv, root: work, cfg: cfg}
}

func testConfig(data, work string) config.Config {
	cfg := config.Default(data, work)
	cfg.Addr = "127.0.0.1:0"
	cfg.Agents = []config.Agent{{ID: "echo", Transport: config.TransportStream, Command: "scripted"}}
	return cfg
}

func (e *testEnv) url() string { return "http://" + e.d.Addr() }

// dial opens a socket on a chat (and fails the test on error).
func (e *testEnv) dial(chatID string, since int64) *wsClient {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, _, err := client.Dial(ctx, e.url(), e.d.Token(), client.Options{Chat: chatID, Since: since})
	if err != nil {
		e.t.Fatal(err)
	}
	w := &wsClient{t: e.t, c: c}
	e.t.Cleanup(func() { c.CloseNow() })
	return w
}

// wsClient reads a socket in the background and keeps every frame.
type wsClient struct {
	t testing.TB
	c *client.Conn

	mu     sync.Mutex
	events []client.Event
	err    error
	once   sync.Once
	notify chan struct{}
}

func (w *wsClient) start() {
	w.once.Do(func() {
		w.notify = make(chan struct{}, 1)
		go func() {
			for {
				ev, err := w.c.Next(context.Background())
				w.mu.Lock()
				if err != nil {
					w.err = err
					w.mu.Unlock()
					w.poke()
					return
				}
				w.events = append(w.events, ev)
				w.mu.Unlock()
				w.poke()
			}
		}()
	})
}

func (w *wsClient) poke() {
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

func (w *wsClient) send(v any) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w.c.Send(ctx, v); err != nil {
		w.t.Fatal(err)
	}
}

func (w *wsClient) snapshot() []client.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]client.Event(nil), w.events...)
}

// waitFor waits until an event after index from matches, and returns its index.
func (w *wsClient) waitFor(from int, within time.Duration, match func(client.Event) bool, what string) int {
	w.t.Helper()
	w.start()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		w.mu.Lock()
		for i := from; i < len(w.events); i++ {
			if match(w.events[i]) {
				w.mu.Unlock()
				return i
			}
		}
		err := w.err
		n := len(w.events)
		w.mu.Unlock()
		if err != nil {
			w.t.Fatalf("waiting for %s: socket ended: %v (after %d events: %s)", what, err, n, summary(w.snapshot()))
		}
		select {
		case <-w.notify:
		case <-deadline.C:
			w.t.Fatalf("waiting for %s: not seen within %v; got %s", what, within, summary(w.snapshot()))
		}
	}
}

func isType(typ string) func(client.Event) bool {
	return func(e client.Event) bool { return e.Type == typ }
}

func field(e client.Event, name string) any {
	var m map[string]any
	_ = json.Unmarshal(e.Raw, &m)
	return m[name]
}

func fieldIs(typ, name string, want any) func(client.Event) bool {
	return func(e client.Event) bool { return e.Type == typ && fmt.Sprint(field(e, name)) == fmt.Sprint(want) }
}

func delivery(id, state string) func(client.Event) bool {
	return func(e client.Event) bool {
		return e.Type == chat.TypeDelivery && field(e, "message_id") == id && field(e, "state") == state
	}
}

func promptDone(id, reason string) func(client.Event) bool {
	return func(e client.Event) bool {
		return e.Type == chat.TypePromptDone && field(e, "message_id") == id && field(e, "stop_reason") == reason
	}
}

func summary(evs []client.Event) string {
	s := ""
	for i, e := range evs {
		if i > 60 {
			s += fmt.Sprintf(" …(+%d)", len(evs)-i)
			break
		}
		s += fmt.Sprintf(" %d:%s", e.Seq, e.Type)
		if e.Type == chat.TypeDelivery || e.Type == chat.TypeError || e.Type == chat.TypePromptDone {
			s += fmt.Sprintf("%s", e.Raw)
		}
	}
	return s
}

func msg(id, text string) map[string]any {
	return map[string]any{"type": "message", "message_id": id, "text": text}
}

// getJSON calls the REST API with the token.
func (e *testEnv) getJSON(path string, v any) int {
	e.t.Helper()
	req, _ := http.NewRequest("GET", e.url()+path, nil)
	req.Header.Set("Authorization", "Bearer "+e.d.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	if v != nil {
		_ = json.NewDecoder(resp.Body).Decode(v)
	}
	return resp.StatusCode
}
