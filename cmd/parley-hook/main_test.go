package main_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/driver/tmux/hook"
	"github.com/parleyhq/parley/internal/testkit"
)

func TestMain(m *testing.M) { testkit.RunAndRemoveBinary(m) }

// An event as Claude Code hands it over: JSON over several lines.
const event = "{\n  \"hook_event_name\": \"UserPromptSubmit\",\n  \"session_id\": \"s1\",\n  \"prompt\": \"make it so\\nnow\"\n}\n"

// hookEnv is a spool and a listening daemon socket for one hook run.
type hookEnv struct {
	spool string
	ln    *hook.Listener
	env   []string
}

func newHookEnv(t *testing.T) hookEnv {
	t.Helper()
	// A short folder: a unix socket's path must fit in 108 bytes.
	dir, err := os.MkdirTemp("", "ph")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	h := hookEnv{spool: filepath.Join(dir, "hooks.jsonl")}
	sock := filepath.Join(dir, "s")
	if h.ln, err = hook.Listen(sock); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.ln.Close() })
	h.env = append(os.Environ(), hook.EnvSpool+"="+h.spool, hook.EnvSocket+"="+sock)
	return h
}

func run(h hookEnv, stdin string, argv ...string) (string, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Stdin = h.env, strings.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	return stderr.String(), err
}

// parley-hook and `parley hook` (what parley runs when parley-hook is not
// beside it) are the same command: each appends the event as one line to the
// spool, whole, and pokes the daemon; and DefaultCommand picks parley-hook
// beside a parley binary.
func TestHookProgramAndSubcommandSpoolTheSameEvent(t *testing.T) {
	parley, program := testkit.ParleyBinary(t), testkit.HookBinary(t)
	if got := hook.DefaultCommand(parley); !slices.Equal(got, []string{program}) {
		t.Fatalf("DefaultCommand(%s) = %q, want the parley-hook beside it", parley, got)
	}
	var spooled []string
	for _, argv := range [][]string{{program}, {parley, "hook"}} {
		h := newHookEnv(t)
		if stderr, err := run(h, event, argv...); err != nil {
			t.Fatalf("%q: %v\n%s", argv, err, stderr)
		}
		select {
		case <-h.ln.Pokes():
		case <-time.After(10 * time.Second):
			t.Fatalf("%q did not poke the daemon's socket", argv)
		}
		b, err := os.ReadFile(h.spool)
		if err != nil {
			t.Fatal(err)
		}
		events, err := hook.OpenSpool(h.spool).Read()
		if err != nil || len(events) != 1 || events[0].Name != "UserPromptSubmit" || events[0].Prompt != "make it so\nnow" {
			t.Fatalf("%q spooled %q: read back %+v, %v", argv, b, events, err)
		}
		spooled = append(spooled, string(b))
	}
	if spooled[0] != spooled[1] {
		t.Fatalf("parley-hook spooled %q, parley hook %q", spooled[0], spooled[1])
	}
}

// Bad input gets a clear error and a failing status, and what the spool
// already holds stays whole.
func TestHookProgramRefusesBadInput(t *testing.T) {
	program := testkit.HookBinary(t)
	h := newHookEnv(t)
	if stderr, err := run(h, event, program); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	before, err := os.ReadFile(h.spool)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, stdin, want string
		argv              []string
		env               []string
	}{
		{name: "not JSON", stdin: "{\"prompt\": ", want: "not JSON", argv: []string{program}},
		{name: "an argument", stdin: event, want: "takes no arguments", argv: []string{program, "hook"}},
		{name: "no spool", stdin: event, want: hook.EnvSpool + " is not set", argv: []string{program}, env: []string{hook.EnvSpool + "="}},
	} {
		hc := h
		hc.env = append(slices.Clip(h.env), c.env...)
		stderr, err := run(hc, c.stdin, c.argv...)
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: %v, stderr %q; want status 1 saying %q", c.name, err, stderr, c.want)
		}
	}
	after, err := os.ReadFile(h.spool)
	if err != nil || !bytes.Equal(after, before) {
		t.Fatalf("the spool was %q, is %q (%v)", before, after, err)
	}
}

// DefaultCommand takes parley-hook only when it is an executable file beside
// the binary.
func TestDefaultCommandNeedsAnExecutableBeside(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "parley")
	fallback := []string{exe, "hook"}
	if got := hook.DefaultCommand(exe); !slices.Equal(got, fallback) {
		t.Fatalf("nothing beside: %q, want %q", got, fallback)
	}
	p := filepath.Join(dir, hook.Program)
	if err := os.Mkdir(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := hook.DefaultCommand(exe); !slices.Equal(got, fallback) {
		t.Fatalf("a folder beside: %q, want %q", got, fallback)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := hook.DefaultCommand(exe); !slices.Equal(got, fallback) {
		t.Fatalf("a file not executable beside: %q, want %q", got, fallback)
	}
	if err := os.Chmod(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := hook.DefaultCommand(exe); !slices.Equal(got, []string{p}) {
		t.Fatalf("parley-hook beside: %q, want %q", got, p)
	}
}

// BenchmarkHookProcess times one hook event as Claude Code runs it (a
// process, the event on stdin, spooled and synced, the daemon poked) for
// parley-hook and for `parley hook`. Claude Code waits for it before it
// goes on with a prompt or a tool call.
// Run: go test -run '^$' -bench HookProcess -benchtime 100x ./cmd/parley-hook/
func BenchmarkHookProcess(b *testing.B) {
	parley, program := testkit.ParleyBinary(b), testkit.HookBinary(b)
	cases := []struct {
		name string
		argv []string
	}{{"parley-hook", []string{program}}, {"parley_hook", []string{parley, "hook"}}}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			dir, err := os.MkdirTemp("", "ph")
			if err != nil {
				b.Fatal(err)
			}
			defer os.RemoveAll(dir)
			sock := filepath.Join(dir, "s")
			ln, err := hook.Listen(sock)
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			env := append(os.Environ(), hook.EnvSpool+"="+filepath.Join(dir, "hooks.jsonl"), hook.EnvSocket+"="+sock)
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				cmd := exec.Command(c.argv[0], c.argv[1:]...)
				cmd.Env, cmd.Stdin = env, strings.NewReader(event)
				start := time.Now()
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v\n%s", err, out)
				}
				lat = append(lat, time.Since(start))
				<-ln.Pokes()
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*9/10].Microseconds())/1000, "p90-ms")
		})
	}
}
