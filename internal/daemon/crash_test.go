package daemon_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/daemon"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/stream"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/scripted"
)

// TestMain lets the test binary double as a daemon child process, so a test can
// kill -9 a real process and start it again on the same data.
func TestMain(m *testing.M) {
	if job := os.Getenv(envReaders); job != "" {
		os.Exit(runReaders(job))
	}
	if data := os.Getenv("PARLEY_TEST_CHILD_DATA"); data != "" {
		runChild(data, os.Getenv("PARLEY_TEST_CHILD_WORK"), os.Getenv("PARLEY_TEST_CHILD_LOG"))
		return
	}
	// Every goroutine a daemon starts must have ended once it is shut down.
	goleak.VerifyTestMain(m)
}

func runChild(data, work, logFile string) {
	cfg := testConfig(data, work)
	var drv driver.Driver = &scripted.Driver{LogFile: logFile}
	if a := os.Getenv(childClaude); a != "" {
		// The real Claude Code (stream) instead of the scripted agent.
		var ag struct {
			Command string
			Env     map[string]string
		}
		if err := json.Unmarshal([]byte(a), &ag); err != nil {
			fmt.Println("ERR", err)
			os.Exit(2)
		}
		cfg.Agents[0].Command, cfg.Agents[0].Env = ag.Command, ag.Env
		drv = stream.New(nil)
	}
	if err := cfg.Validate(); err != nil {
		fmt.Println("ERR", err)
		os.Exit(2)
	}
	d, err := daemon.Start(context.Background(), cfg, daemon.Options{
		Drivers: map[string]driver.Driver{"stream": drv},
		Logger:  slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(2)
	}
	fmt.Println("ADDR", d.Addr(), d.Token())
	select {} // until killed
}

// childDirs makes a child daemon's data directory, its agents' working
// directory and the scripted agent's delivery log, under one temporary root.
func childDirs(t *testing.T) (data, work, logFile string) {
	t.Helper()
	root, _ := filepath.EvalSymlinks(t.TempDir())
	data, work, logFile = filepath.Join(root, "data"), filepath.Join(root, "work"), filepath.Join(root, "deliveries")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	return data, work, logFile
}

type child struct {
	cmd   *exec.Cmd
	url   string
	token string
}

func startChild(t *testing.T, data, work, logFile string) *child {
	t.Helper()
	return startChildTo(t, data, work, logFile, os.Stderr)
}

// startChildTo starts the child with its log (its stderr) going to stderr.
func startChildTo(t *testing.T, data, work, logFile string, stderr io.Writer, env ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PARLEY_TEST_CHILD_DATA="+data, "PARLEY_TEST_CHILD_WORK="+work, "PARLEY_TEST_CHILD_LOG="+logFile)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("child said nothing: %v", err)
	}
	f := strings.Fields(line)
	if len(f) != 3 || f[0] != "ADDR" {
		t.Fatalf("child said %q", line)
	}
	return &child{cmd: cmd, url: "http://" + f[1], token: f[2]}
}

func (c *child) dial(t *testing.T, chatID string) *chatsock.Conn {
	return chatsock.Dial(t, c.url, c.token, client.Options{Chat: chatID, Since: -1})
}

func TestKill9WithQueuedMessages(t *testing.T) {
	t.Parallel()
	data, work, logFile := childDirs(t)
	first := startChild(t, data, work, logFile)
	c := first.dial(t, "crashy")
	c.WaitFor(0, 5*time.Second, chatsock.Type(chat.TypeReplayDone), "ready")
	c.Send(chatsock.Msg("m0", "hang"))
	c.WaitFor(0, 5*time.Second, chatsock.Delivery("m0", chat.DeliverySubmitted), "m0 in flight")
	for _, id := range []string{"m1", "m2", "m3"} {
		c.Send(chatsock.Msg(id, "say "+id))
	}
	c.WaitFor(0, 5*time.Second, chatsock.Delivery("m3", chat.DeliveryQueued), "three queued")

	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.cmd.Wait()

	second := startChild(t, data, work, logFile)
	r := second.dial(t, "crashy")
	r.WaitFor(0, 5*time.Second, chatsock.PromptDone("m0", chat.StopError), "the cut-off turn ends with error")
	for _, id := range []string{"m1", "m2", "m3"} {
		r.WaitFor(0, 10*time.Second, chatsock.PromptDone(id, chat.StopEndTurn), id+" delivered after restart")
	}
	errSeen := false
	for _, ev := range r.Snapshot() {
		if ev.Type == chat.TypeError && chatsock.FieldOf(ev, "ref") == "m0" {
			errSeen = true
		}
	}
	if !errSeen {
		t.Error("no error event names the turn cut off by the crash")
	}
	// Each message reached the agent exactly once, across both processes.
	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		got = append(got, strings.Fields(line)[1])
	}
	sort.Strings(got)
	if strings.Join(got, ",") != "m0,m1,m2,m3" {
		t.Fatalf("deliveries: got %v, want m0..m3 once each", got)
	}
	// The log has no gap.
	var seqs []int64
	for _, ev := range r.Snapshot() {
		if ev.Seq != 0 {
			seqs = append(seqs, ev.Seq)
		}
	}
	for i := 1; i < len(seqs); i++ {
		if seqs[i] != seqs[i-1]+1 {
			t.Fatalf("gap in the log: %v", seqs)
		}
	}
	if seqs[0] != 1 {
		t.Fatalf("replay starts at %d, want 1", seqs[0])
	}
}
