//go:build e2e

package terminal_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/driver/tmux"
	"github.com/parleyhq/parley/internal/driver/tmux/ctl"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

// paneOf returns the pid of the process in a thread's tmux pane.
func (td *tmuxDaemon) paneOf(t testing.TB, thread chat.ThreadID) int {
	t.Helper()
	c, err := ctl.New("", td.socket, nil)
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Pane(context.Background(), ctl.SessionTarget(tmux.SessionName(thread)))
	if err != nil {
		t.Fatalf("the pane of thread %s: %v", thread, err)
	}
	return info.PID
}

// newThreadIn sends text as the first message of a new claude-tmux thread in
// dir, as a person would, and returns the thread and where its turn ended.
func newThreadIn(t *testing.T, s *chatsock.Conn, dir, id, text string) (chat.ThreadID, int) {
	t.Helper()
	m := chatsock.Msg(id, text)
	m["intent"] = map[string]any{"new": map[string]any{"cwd": dir, "agent": "claude-tmux"}}
	from := s.Len()
	s.Send(m)
	at := s.WaitFor(from, wait, chatsock.Delivery(id, chat.DeliverySubmitted), "submitted in "+dir)
	end := s.WaitFor(at, wait, chatsock.PromptDone(id, chat.StopEndTurn), "turn end in "+dir)
	return s.Get(at).Thread, end
}

// A folder's name is never a tmux format: "#(touch marker)" runs nothing and
// "x#{pane_pid}y" is where the agent really runs (tmux expands formats in
// new-session -c; parley no longer passes the directory to tmux at all).
func TestFolderNameIsNotATmuxFormat(t *testing.T) {
	testkit.NeedsTmux(t)
	// parley's own directory (where tmux's server starts, and where a format
	// job would run) is a fresh one this test can search.
	here, _ := filepath.EvalSymlinks(t.TempDir())
	t.Setenv("PARLEY_TEST_CLAUDE", testkit.ClaudeBin(t)) // found from the repository's folder
	t.Chdir(here)
	td := startTmuxDaemon(t, []claudeapi.Rule{
		{Match: claudeapi.Match{Exact: "hello"}, Reply: claudeapi.Text(answer, 1, 0)},
	})
	s := chatsock.Dial(t, "http://"+td.d.Addr(), td.d.Token(), client.Options{Chat: "folders", Since: -1})
	s.WaitFor(0, wait, chatsock.Type(chat.TypeReplayDone), "ready")
	for i, name := range []string{"#(touch marker)", "x#{pane_pid}y"} {
		dir := filepath.Join(td.work, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		thread, end := newThreadIn(t, s, dir, "m"+strconv.Itoa(i), "hello")
		if got := chatsock.Chunks(s.Snapshot()[:end]); !strings.Contains(got, answer) {
			t.Errorf("%q: the answer never came: %q", name, got)
		}
		pid := td.paneOf(t, thread)
		cwd, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd")
		if err != nil {
			t.Fatal(err)
		}
		if cwd != dir {
			t.Errorf("thread in %q: the agent (pid %d) runs in %q", dir, pid, cwd)
		}
	}
	// No "marker" anywhere a format job could have run: parley's directory,
	// the root, the agent's HOME (all under two fresh folders) and the
	// person's HOME.
	home, _ := os.UserHomeDir()
	for _, d := range []string{here, filepath.Dir(td.work), home} {
		_ = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if e.IsDir() && p != d && d == home {
				return fs.SkipDir // the person's HOME: its top only
			}
			if e.Name() == "marker" {
				t.Errorf("a folder's name ran a command: %s exists", p)
			}
			return nil
		})
	}
}

// killAgent kills the process in a thread's pane (the agent, as a crash
// would) and waits until the thread says its session exited.
func (td *tmuxDaemon) killAgent(t *testing.T, s *chatsock.Conn, thread chat.ThreadID) {
	t.Helper()
	pid := td.paneOf(t, thread)
	from := s.Len()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	s.WaitFor(from, wait, chatsock.Field(chat.TypeSessionInfo, "state", "exited"), "the session exited")
}

// After Claude Code exits, each resume emits only what is new: every answer
// is in the thread's log once, however many times the agent was killed and
// resumed (it used to re-emit the whole earlier conversation each time).
func TestResumeEmitsOnlyNewRecords(t *testing.T) {
	const rounds = 4
	var rules []claudeapi.Rule
	for i := range rounds {
		rules = append(rules, claudeapi.Rule{Match: claudeapi.Match{Exact: "question " + strconv.Itoa(i)},
			Reply: claudeapi.Text("Answer number "+strconv.Itoa(i)+".", 1, 0)})
	}
	td := startTmuxDaemon(t, rules)
	s := chatsock.Dial(t, "http://"+td.d.Addr(), td.d.Token(), client.Options{Chat: "resume", Since: -1})
	s.WaitFor(0, wait, chatsock.Type(chat.TypeReplayDone), "ready")
	var thread chat.ThreadID
	for i := range rounds {
		if i > 0 {
			td.killAgent(t, s, thread)
		}
		id := "m" + strconv.Itoa(i)
		from := s.Len()
		s.Send(chatsock.Msg(id, "question "+strconv.Itoa(i)))
		at := s.WaitFor(from, wait, chatsock.Delivery(id, chat.DeliverySubmitted), "submitted")
		s.WaitFor(at, wait, chatsock.PromptDone(id, chat.StopEndTurn), "turn end")
		thread = s.Get(at).Thread
	}
	// The last answer's chunk may follow its turn's end by a moment; then
	// nothing more may come.
	s.WaitFor(0, wait, func(e client.Event) bool {
		return e.Type == chat.TypeAgentChunk && strings.Contains(string(e.Raw), "Answer number "+strconv.Itoa(rounds-1)+".")
	}, "the last answer")
	all := chatsock.Chunks(s.Snapshot())
	for i := range rounds {
		want := "Answer number " + strconv.Itoa(i) + "."
		if n := strings.Count(all, want); n != 1 {
			t.Errorf("%q is in the thread's log %d times, want once\n%s", want, n, chatsock.Summary(s.Snapshot()))
		}
	}
	if got := td.api.ScenarioRequests(); len(got) != rounds {
		t.Errorf("the model got %d requests, want %d", len(got), rounds)
	}
}

// A message sent the moment an idle thread unloads is delivered: the new
// start waits for the old session to be gone (it used to find the dying tmux
// session by its name, take it over, and lose it to the unload's kill).
func TestMessageRightAfterIdleUnload(t *testing.T) {
	const rounds = 4
	td := startTmuxDaemon(t, []claudeapi.Rule{{Match: claudeapi.Match{Contains: "note"}, Reply: claudeapi.Text("Noted.", 1, 0)}},
		func(c *config.Config) { c.Agents[0].IdleTimeout = config.Duration{Duration: time.Second} })
	s := chatsock.Dial(t, "http://"+td.d.Addr(), td.d.Token(), client.Options{Chat: "idle", Since: -1})
	s.WaitFor(0, wait, chatsock.Type(chat.TypeReplayDone), "ready")
	for i := range rounds {
		id := "m" + strconv.Itoa(i)
		from := s.Len()
		if i > 0 {
			from = s.WaitFor(from, wait, chatsock.Field(chat.TypeSessionInfo, "state", "unloaded"), "idle unload")
		}
		s.Send(chatsock.Msg(id, "note "+strconv.Itoa(i)))
		end := s.WaitFor(from, wait, func(e client.Event) bool {
			return chatsock.Delivery(id, chat.DeliverySubmitted)(e) || chatsock.Delivery(id, chat.DeliveryFailed)(e)
		}, "a receipt for "+id)
		if st := chatsock.FieldOf(s.Get(end), "state"); st != chat.DeliverySubmitted {
			t.Fatalf("%s sent right after an idle unload: %v %v\n%s", id, st, chatsock.FieldOf(s.Get(end), "detail"), chatsock.Summary(s.Snapshot()))
		}
		s.WaitFor(end, wait, chatsock.PromptDone(id, chat.StopEndTurn), "turn end")
	}
	for i := range rounds {
		want := "note " + strconv.Itoa(i)
		n := 0
		for _, r := range td.api.ScenarioRequests() {
			if texts := r.UserTexts(); len(texts) > 0 && texts[len(texts)-1] == want {
				n++
			}
		}
		if n != 1 {
			t.Errorf("the model was asked about %q %d times, want once", want, n)
		}
	}
}
