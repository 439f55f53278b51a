package cli_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/daemon"
)

// noticesOf reads a thread's notices back from the daemon's log.
func noticesOf(t *testing.T, d *daemon.Daemon, th chat.ThreadID) []chat.Notice {
	t.Helper()
	api := client.API{Server: "http://" + d.Addr(), Token: d.Token()}
	var body struct {
		Events []json.RawMessage `json:"events"`
	}
	if err := api.Call(context.Background(), http.MethodGet, "/api/threads/"+string(th)+"/events", nil, &body); err != nil {
		t.Fatal(err)
	}
	var out []chat.Notice
	for _, raw := range body.Events {
		var e struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(raw, &e); err != nil {
			t.Fatal(err)
		}
		if e.Type != chat.TypeNotice {
			continue
		}
		var n chat.Notice
		if err := json.Unmarshal(raw, &n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

// threadOf makes a thread on chatID (one message to the scripted agent)
// and returns it.
func threadOf(t *testing.T, d *daemon.Daemon, chatID string) chat.ThreadID {
	t.Helper()
	if code, _, errs := parley(append(append([]string{"send"}, remote(d, chatID)...), "hello")...); code != 0 {
		t.Fatalf("send: %d %s", code, errs)
	}
	id, err := client.API{Server: "http://" + d.Addr(), Token: d.Token()}.RouteThread(context.Background(), chat.RouteKey{Channel: "tui", Chat: chatID})
	if err != nil || id == "" {
		t.Fatalf("route thread %q: %v", id, err)
	}
	return id
}

// parley notify stores a notice in the thread named, or in the agent's
// thread changed last, and exits 0 once it is stored.
func TestNotifyStoresANotice(t *testing.T) {
	d := startDaemon(t)
	older, newer := threadOf(t, d, "n1"), threadOf(t, d, "n2")
	srv := []string{"--server", "http://" + d.Addr(), "--token", d.Token()}

	// The agent's thread changed last is the newer one.
	code, out, errs := parley(append(append([]string{"notify"}, srv...), "--agent", "echo", "CI failed")...)
	if code != 0 || !strings.Contains(out, string(newer)) {
		t.Fatalf("notify --agent: %d %q %q, want it to name thread %s", code, out, errs, newer)
	}
	if got := noticesOf(t, d, newer); len(got) != 1 || got[0].Text != "CI failed" || got[0].Level != chat.NoticeInfo {
		t.Fatalf("the agent's newest thread's notices %+v", got)
	}
	code, out, errs = parley(append(append([]string{"notify"}, srv...), "--thread", string(older), "--level", "done", "deploy finished")...)
	if code != 0 {
		t.Fatalf("notify --thread: %d %q %q", code, out, errs)
	}
	if got := noticesOf(t, d, older); len(got) != 1 || got[0] != (chat.Notice{Text: "deploy finished", Level: chat.NoticeDone, From: chat.FromCLI}) {
		t.Fatalf("thread's notices %+v", got)
	}

	if got := noticesOf(t, d, newer); len(got) != 1 {
		t.Fatalf("the newer thread got %d notices, want its one", len(got))
	}
}

// Bad input gets a clear error, a non-zero exit, and stores nothing.
func TestNotifyRefusesBadInput(t *testing.T) {
	d := startDaemon(t)
	th := threadOf(t, d, "n1")
	srv := []string{"--server", "http://" + d.Addr(), "--token", d.Token()}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no target", []string{"hi"}, "one of the two"},
		{"both targets", []string{"--thread", string(th), "--agent", "echo", "hi"}, "one of the two"},
		{"bad level", []string{"--thread", string(th), "--level", "loud", "hi"}, `level "loud"`},
		{"unknown thread", []string{"--thread", "t_nosuchthread", "hi"}, "not found"},
		{"unknown agent", []string{"--agent", "nobody", "hi"}, `agent "nobody" has no thread`},
		{"empty text", []string{"--thread", string(th), "  "}, "nothing to say"},
		{"wrong token", []string{"--token", "wrong", "--thread", string(th), "hi"}, "401"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, errs := parley(append(append([]string{"notify"}, srv...), c.args...)...)
			if code == 0 || !strings.Contains(errs, c.want) {
				t.Fatalf("exit %d, stderr %q; want a failure saying %q", code, errs, c.want)
			}
		})
	}
	if got := noticesOf(t, d, th); len(got) != 0 {
		t.Fatalf("notices stored: %+v", got)
	}
	// The body is bounded.
	big := strings.Repeat("x", 20<<10)
	code, _, errs := parley(append(append([]string{"notify"}, srv...), "--thread", string(th), big)...)
	if code == 0 || !strings.Contains(errs, "larger than") {
		t.Fatalf("a 20 KiB notice: exit %d, %q", code, errs)
	}
}
