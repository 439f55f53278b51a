package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/cli"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/daemon"
	"github.com/parleyhq/parley/internal/testkit/scriptd"
)

// sendResult is how a `parley send` run ended.
type sendResult struct {
	code     int
	out, err string
}

// sendUntilChunk runs `parley send flags… "stream 100000 10ms"` to chatID in
// the background and watches the chat, as a second client on the same route,
// until the agent streams its first chunk. It returns the watcher and the
// channel the send's result comes on.
func sendUntilChunk(t *testing.T, ctx context.Context, d *daemon.Daemon, chatID string, flags ...string) (*client.Conn, <-chan sendResult) {
	t.Helper()
	c, _, err := client.Dial(ctx, "http://"+d.Addr(), d.Token(), client.Options{Chat: chatID, Channel: "tui", Since: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	done := make(chan sendResult, 1)
	go func() {
		code, out, errs := parley(append(append(append([]string{"send"}, flags...), remote(d, chatID)...), "stream 100000 10ms")...)
		done <- sendResult{code, out, errs}
	}()
	for {
		ev, err := c.Next(ctx)
		if err != nil {
			t.Fatalf("watcher: %v", err)
		}
		if ev.Type == chat.TypeAgentChunk && ev.Seq > 0 {
			return c, done
		}
	}
}

// startDaemon runs a real daemon over the scripted agent ("echo").
func startDaemon(t *testing.T) *daemon.Daemon {
	t.Helper()
	current, _ := startRestartable(t)
	return current()
}

// startRestartable is startDaemon whose daemon restart stops and starts again
// on the same address and data.
func startRestartable(t *testing.T) (current func() *daemon.Daemon, restart func()) {
	t.Helper()
	r := scriptd.Start(t, nil)
	return r.D, r.Restart
}

// parley runs the CLI in-process and returns its status and output.
func parley(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := cli.Main(cli.Build{Version: "test"}, args, &out, &errb)
	return code, out.String(), errb.String()
}

func remote(d *daemon.Daemon, chatID string) []string {
	return []string{"--server", "http://" + d.Addr(), "--token", d.Token(), "--chat", chatID}
}

func TestSendExitCodes(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	cases := []struct {
		name     string
		args     []string
		text     string
		code     int
		stdout   string // a prefix
		inStderr string
	}{
		{"end_turn", nil, "say the answer", cli.ExitEndTurn, "the answer\n", ""},
		{"error", nil, "crash", cli.ExitAgentError, "", "ended in an error"},
		{"max_tokens", nil, "say partial\nend max_tokens", cli.ExitOtherStop, "partial\n", "max_tokens"},
		{"refused", []string{"--agent", "nosuch"}, "hello", cli.ExitNotDelivered, "", "unknown agent"},
		{"timeout", []string{"--timeout", "300ms"}, "hang", cli.ExitTimeout, "", "timed out"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append(append([]string{"send"}, remote(d, "send-"+c.name)...), c.args...)
			code, out, errs := parley(append(args, c.text)...)
			if code != c.code {
				t.Errorf("exit status: got %d, want %d (stderr %q)", code, c.code, errs)
			}
			if !strings.HasPrefix(out, c.stdout) || (c.stdout == "" && out != "") {
				t.Errorf("stdout: got %q, want %q", out, c.stdout)
			}
			if !strings.Contains(errs, c.inStderr) {
				t.Errorf("stderr: got %q, want it to say %q", errs, c.inStderr)
			}
		})
	}
}

func TestSendCancelled(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	const chatID = "send-cancel"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// A second client on the same route watches for the turn and stops it.
	c, done := sendUntilChunk(t, ctx, d, chatID)
	if err := c.Send(ctx, map[string]string{"type": "stop"}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.code != cli.ExitCancelled {
			t.Errorf("exit status: got %d, want %d (stderr %q)", r.code, cli.ExitCancelled, r.err)
		}
		if !strings.HasPrefix(r.out, "c1 ") || strings.Contains(r.out, "c100000") {
			t.Errorf("stdout: got %q, want the first chunks and not the last", r.out)
		}
	case <-ctx.Done():
		t.Fatal("parley send did not end after the stop")
	}
}

func TestSendWithoutDaemon(t *testing.T) {
	t.Parallel()
	code, _, errs := parley("send", "--data", t.TempDir(), "hello")
	if code != cli.ExitFailure || !strings.Contains(errs, "no running parley") {
		t.Errorf("got %d %q; want %d and a word about starting parley", code, errs, cli.ExitFailure)
	}
	code, _, errs = parley("send", "--server", "http://127.0.0.1:1", "hello")
	if code != cli.ExitFailure || !strings.Contains(errs, "--token") {
		t.Errorf("--server without a token: got %d %q; want %d", code, errs, cli.ExitFailure)
	}
}

func TestSendHelpDocumentsExitCodes(t *testing.T) {
	t.Parallel()
	code, out, _ := parley("send", "--help")
	for _, want := range []string{"0  end_turn", "3  not delivered", "4  cancelled", "5  error"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("send --help: status %d, lacks %q", code, want)
		}
	}
}

func TestSendToThreadAndNew(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	code, _, errs := parley(append(append([]string{"send"}, remote(d, "a")...), "say first")...)
	if code != 0 {
		t.Fatalf("first send: %d %s", code, errs)
	}
	code, out, errs := parley(append([]string{"threads", "--json"}, remote(d, "a")[:4]...)...)
	if code != 0 {
		t.Fatalf("threads: %d %s", code, errs)
	}
	var ths []chat.Thread
	if err := json.Unmarshal([]byte(out), &ths); err != nil || len(ths) != 1 {
		t.Fatalf("threads --json: got %q (%v); want one thread", out, err)
	}
	// Another route continues that thread with --thread.
	code, out, errs = parley(append(append([]string{"send"}, remote(d, "b")...), "--thread", string(ths[0].ID), "say second")...)
	if code != 0 || out != "second\n" {
		t.Fatalf("send --thread: %d %q %s", code, out, errs)
	}
	// --new starts another.
	code, _, errs = parley(append(append([]string{"send"}, remote(d, "b")...), "--new", "say third")...)
	if code != 0 {
		t.Fatalf("send --new: %d %s", code, errs)
	}
	code, out, _ = parley(append([]string{"threads"}, remote(d, "a")[:4]...)...)
	if code != 0 || !strings.Contains(out, "ID") || strings.Count(out, "echo") != 2 {
		t.Errorf("threads: status %d, got\n%s\nwant a header and two echo threads", code, out)
	}
}

// TestSendSurvivesADaemonRestart: the socket drops mid-turn; parley send dials
// again with since, prints nothing twice, and reports how the turn ended.
func TestSendSurvivesADaemonRestart(t *testing.T) {
	t.Parallel()
	current, restart := startRestartable(t)
	d := current()
	const chatID = "send-restart"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, done := sendUntilChunk(t, ctx, d, chatID, "-v")
	c.CloseNow()
	restart()
	var r sendResult
	select {
	case r = <-done:
	case <-ctx.Done():
		t.Fatal("parley send did not end after the restart")
	}
	// The daemon cut the turn off on the way down; after it came back, the
	// replay from since said so.
	if r.code != cli.ExitAgentError || !strings.Contains(r.err, "reconnecting") || !strings.Contains(r.err, "cut off") {
		t.Errorf("got status %d, stderr %q; want %d after reconnecting, saying the turn was cut off", r.code, r.err, cli.ExitAgentError)
	}
	words := strings.Fields(r.out)
	if len(words) == 0 {
		t.Fatalf("stdout %q: want the chunks streamed before the restart", r.out)
	}
	for i, w := range words {
		if want := "c" + strconv.Itoa(i+1); w != want {
			t.Fatalf("stdout word %d is %q, want %q (each chunk once, in order): %q", i, w, want, r.out)
		}
	}
}

// TestSendFile: --file saves the file in the thread's working directory and
// the message the agent gets names its path.
func TestSendFile(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	file := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(file, []byte("remember the milk"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs := parley(append(append([]string{"send"}, remote(d, "files")...), "--file", file, "say read it")...)
	if code != 0 {
		t.Fatalf("send --file: %d %s", code, errs)
	}
	code, out, errs := parley(append([]string{"threads", "--json"}, remote(d, "files")[:4]...)...)
	var ths []chat.Thread
	if err := json.Unmarshal([]byte(out), &ths); code != 0 || err != nil || len(ths) != 1 {
		t.Fatalf("threads --json: %d %q %s (%v); want one thread", code, out, errs, err)
	}
	got, err := os.ReadFile(filepath.Join(ths[0].Cwd, ".parley-uploads", "notes.txt"))
	if err != nil || string(got) != "remember the milk" {
		t.Errorf("the thread's directory holds %q (%v), want the attached file", got, err)
	}
	code, _, errs = parley(append(append([]string{"send"}, remote(d, "files")...), "--file", filepath.Join(t.TempDir(), "missing"), "say x")...)
	if code != cli.ExitFailure || !strings.Contains(errs, "--file") {
		t.Errorf("a missing file: got %d %q, want exit 1 naming --file", code, errs)
	}
}
