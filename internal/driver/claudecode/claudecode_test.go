package claudecode

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/testkit"
)

func TestToolTitleAndKind(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, input, desc, title, kind string
	}{
		{"Bash", `{"command":"go test ./...","description":"Run the tests"}`, "", "go test ./...", "execute"},
		{"Read", `{"file_path":"/w/a.go"}`, "", "Read /w/a.go", "read"},
		{"Write", `{"file_path":"/w/b.go","content":"x"}`, "", "Write /w/b.go", "edit"},
		{"Grep", `{"pattern":"TODO"}`, "", "Grep TODO", "search"},
		{"WebFetch", `{"url":"https://example.org"}`, "", "Fetch https://example.org", "fetch"},
		{"Task", `{"description":"Look around"}`, "", "Look around", "think"},
		{"Mystery", `{}`, "what the agent said", "what the agent said", "other"},
		{"Mystery", `not json`, "", "Mystery", "other"},
	}
	for _, c := range cases {
		if got := ToolTitle(c.name, json.RawMessage(c.input), c.desc); got != c.title {
			t.Errorf("ToolTitle(%s, %s): got %q, want %q", c.name, c.input, got, c.title)
		}
		if got := ToolKind(c.name); got != c.kind {
			t.Errorf("ToolKind(%s): got %q, want %q", c.name, got, c.kind)
		}
	}
}

func TestBlocksAndResultText(t *testing.T) {
	t.Parallel()
	var m Message
	json.Unmarshal([]byte(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},{"type":"tool_result","tool_use_id":"t2","content":"plain"}]}`), &m)
	bs := m.Blocks()
	if len(bs) != 2 || bs[0].ResultText() != "ab" || bs[1].ResultText() != "plain" {
		t.Fatalf("got %+v", bs)
	}
	if (&Message{Content: json.RawMessage(`"just words"`)}).Blocks() != nil {
		t.Fatal("a string content has no blocks")
	}
	tc := ToolCall(Block{ID: "x", Name: "Edit", Input: json.RawMessage(`{"file_path":"/w/c.go"}`)})
	if tc.Kind != "edit" || tc.Status != "pending" || len(tc.Locations) != 1 || tc.Locations[0].Path != "/w/c.go" {
		t.Fatalf("ToolCall: %+v", tc)
	}
}

// A Claude Code that exited and was not reaped (a zombie: a killed parley's
// agent in a container whose init does not reap) does not run its session:
// a restarted parley must not refuse the thread its own session for it.
func TestAZombieDoesNotRunItsSession(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Wait() }()
	pid := cmd.Process.Pid
	testkit.Eventually(t, 30*time.Second, func() bool { return !Alive(pid, "") }, "an exited, unreaped process is seen as alive")
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the zombie should still answer kill 0: %v", err)
	}
	if !Alive(os.Getpid(), "") {
		t.Fatal("a live process is seen as gone")
	}
}

// A Claude Code being killed (the kernel tearing it down: PF_EXITING in
// its stat flags, before it is a zombie) does not run its session either:
// a parley restarted at once after kill -9 of itself and its agent met one
// and refused the thread its own session (make kill-cycles, at load).
// The stat lines are /proc/<pid>/stat as Linux writes them.
func TestAnExitingProcessDoesNotRunItsSession(t *testing.T) {
	t.Parallel()
	const live = "29483 (claude) S 1 29483 29483 0 -1 4194560 9012 0 0 0 310 42 0 0 20 0 11 0 2434982 1133440 39000 18446744073709551615 1 1 0 0 0 0 0 16781312 17990 0 0 0 17 1 0 0 0 0 0"
	exiting := strings.Replace(live, " 4194560 ", " 4194564 ", 1) // | PF_EXITING
	if !aliveStat(live, "2434982") {
		t.Fatal("a live process is seen as gone")
	}
	if aliveStat(exiting, "2434982") {
		t.Fatal("a process in exit (PF_EXITING) is seen as running its session")
	}
	if aliveStat(live, "999") {
		t.Fatal("a reused pid (another start time) is seen as the session's process")
	}
	if aliveStat(strings.Replace(live, ") S ", ") Z ", 1), "") {
		t.Fatal("a zombie is seen as alive")
	}
}
