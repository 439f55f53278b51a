package daemon_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/gitwork"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
)

// gitEnv keeps the machine's git config out of a test: its own home, no
// system config, a committer.
func gitEnv(t *testing.T) {
	home := t.TempDir()
	for k, v := range map[string]string{
		"HOME": home, "XDG_CONFIG_HOME": home, "GIT_CONFIG_NOSYSTEM": "1",
		"GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.com",
		"GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.com",
	} {
		t.Setenv(k, v)
	}
}

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func writeFile(t *testing.T, p, text string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

type threadAnswer struct {
	Thread chat.Thread `json:"thread"`
}

type apiError struct {
	Error struct{ Code, Message string } `json:"error"`
}

// Over a real daemon and real git: two threads each get a worktree of their
// own on one repository and change the same file without seeing each
// other's change; a line's comment reaches the agent as a message naming
// path:line with the hunk; a commit, a push to a bare remote, a hook that
// refuses, and deleting a thread with its worktree (refused while it holds
// uncommitted work, unless forced) each end in one clear answer.
func TestThreadWorktreesChangesAndShipping(t *testing.T) {
	gitEnv(t) // t.Setenv: this test is not parallel
	e := startDaemon(t, nil)
	proj := filepath.Join(e.root, "proj")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	gitIn(t, proj, "init", "-q", "-b", "main")
	writeFile(t, filepath.Join(proj, "a.txt"), "one\ntwo\nthree\n")
	gitIn(t, proj, "add", "-A")
	gitIn(t, proj, "commit", "-qm", "first")
	bare := filepath.Join(t.TempDir(), "origin.git")
	gitIn(t, proj, "init", "-q", "--bare", bare)
	gitIn(t, proj, "remote", "add", "origin", bare)
	start := gitIn(t, proj, "rev-parse", "HEAD")

	newThread := func(chatID, msgID, text string) chat.Thread {
		c := e.dial(chatID, -1)
		c.WaitFor(0, 10*time.Second, chatsock.Type(chat.TypeReplayDone), "ready")
		c.Send(map[string]any{"type": "message", "message_id": msgID, "text": text,
			"intent": map[string]any{"new": map[string]any{"cwd": proj, "agent": "echo", "worktree": true}}})
		i := c.WaitFor(0, 10*time.Second, chatsock.PromptDone(msgID, chat.StopEndTurn), "the first turn")
		var got threadAnswer
		if code := e.api("GET", "/api/threads/"+string(c.Get(i).Thread), nil, &got); code != 200 {
			t.Fatalf("GET thread: %d", code)
		}
		return got.Thread
	}
	one := newThread("one", "m1", "Fix the parser")
	two := newThread("two", "m2", "Fix the parser too")
	for _, th := range []chat.Thread{one, two} {
		if th.Worktree == "" || th.Cwd != th.Worktree || th.GitBase != start || !strings.HasPrefix(th.Worktree, proj+".parley-worktrees/fix-the-parser") {
			t.Fatalf("thread %s: cwd %q worktree %q base %q", th.ID, th.Cwd, th.Worktree, th.GitBase)
		}
	}

	// Each "agent" edits the same file in its own worktree.
	writeFile(t, filepath.Join(one.Cwd, "a.txt"), "one\n2\nthree\n")
	writeFile(t, filepath.Join(two.Cwd, "a.txt"), "one\ntwo\n3\n")
	writeFile(t, filepath.Join(two.Cwd, "notes.md"), "new file\n")
	var c1, c2 gitwork.Changes
	if code := e.api("GET", "/api/threads/"+string(one.ID)+"/changes", nil, &c1); code != 200 {
		t.Fatalf("changes: %d", code)
	}
	if code := e.api("GET", "/api/threads/"+string(two.ID)+"/changes", nil, &c2); code != 200 {
		t.Fatalf("changes: %d", code)
	}
	if c1.Patch != gitIn(t, one.Cwd, "diff", start)+"\n" || strings.Contains(c1.Patch, "+3") || len(c1.Files) != 1 {
		t.Fatalf("thread one's change:\n%s", c1.Patch)
	}
	if !strings.Contains(c2.Patch, "+3") || strings.Contains(c2.Patch, "+2") || len(c2.Files) != 2 || c2.Files[1].Status != "untracked" {
		t.Fatalf("thread two's change: %+v\n%s", c2.Files, c2.Patch)
	}
	if c1.Branch != "parley/"+filepath.Base(one.Worktree) || c1.Base != start {
		t.Fatalf("branch %q base %q", c1.Branch, c1.Base)
	}
	if d := gitIn(t, proj, "status", "--porcelain"); d != "" {
		t.Fatalf("the person's checkout changed:\n%s", d)
	}

	// A comment on a line is a message to the agent, with receipts.
	sock := e.dial("one", -1)
	sock.WaitFor(0, 10*time.Second, chatsock.Type(chat.TypeReplayDone), "ready")
	var sent struct{ MessageID, State string }
	hunk := "@@ -1,3 +1,3 @@\n one\n-two\n+2\n three"
	if code := e.api("POST", "/api/threads/"+string(one.ID)+"/comment?wait=10s",
		map[string]any{"path": "a.txt", "line": 2, "hunk": hunk, "text": "spell the number out", "message_id": "c1"}, &sent); code != 200 || sent.State != chat.DeliverySubmitted {
		t.Fatalf("comment: %d %+v", code, sent)
	}
	i := sock.WaitFor(0, 10*time.Second, chatsock.Field(chat.TypeUserMessage, "message_id", "c1"), "the comment in the thread")
	text, _ := chatsock.FieldOf(sock.Get(i), "text").(string)
	if !strings.HasPrefix(text, "Comment on `a.txt:2`:\n```diff\n"+hunk+"\n```\nspell the number out") {
		t.Fatalf("the comment's message: %q", text)
	}
	var bad apiError
	if code := e.api("POST", "/api/threads/"+string(one.ID)+"/comment", map[string]any{"path": "../x", "line": 1, "text": "x"}, &bad); code != 400 {
		t.Fatalf("a path outside the repository: %d %+v", code, bad)
	}

	// Commit, push, and the pull request's page.
	var committed gitwork.Committed
	if code := e.api("POST", "/api/threads/"+string(one.ID)+"/commit", map[string]any{"message": "Spell it as a digit"}, &committed); code != 200 || committed.Commit == "" {
		t.Fatalf("commit: %d %+v", code, committed)
	}
	if code := e.api("POST", "/api/threads/"+string(one.ID)+"/commit", map[string]any{"message": "again"}, &bad); code != 409 || bad.Error.Code != gitwork.CodeNothingToCommit {
		t.Fatalf("nothing to commit: %d %+v", code, bad)
	}
	var pushed gitwork.Pushed
	if code := e.api("POST", "/api/threads/"+string(one.ID)+"/push", map[string]any{}, &pushed); code != 200 || pushed.Remote != "origin" {
		t.Fatalf("push: %d %+v", code, pushed)
	}
	if got := gitIn(t, bare, "rev-parse", c1.Branch); got != committed.Commit {
		t.Fatalf("the remote's %s is %s, want %s", c1.Branch, got, committed.Commit)
	}
	if code := e.api("POST", "/api/threads/"+string(one.ID)+"/pr", map[string]any{}, &bad); code != 409 || bad.Error.Code != gitwork.CodeNoRemote {
		t.Fatalf("a pull request to a local remote: %d %+v", code, bad)
	}

	// The person's pre-commit hook refuses thread two's commit: nothing is
	// committed, and the answer carries the hook's words.
	hook := filepath.Join(proj, ".git", "hooks", "pre-commit")
	writeFile(t, hook, "#!/bin/sh\necho 'tests fail: notes.md is not allowed' >&2\nexit 1\n")
	if err := os.Chmod(hook, 0o755); err != nil {
		t.Fatal(err)
	}
	if code := e.api("POST", "/api/threads/"+string(two.ID)+"/commit", map[string]any{"message": "x"}, &bad); code != 409 ||
		bad.Error.Code != gitwork.CodeCommitFailed || !strings.Contains(bad.Error.Message, "notes.md is not allowed") {
		t.Fatalf("a failing hook: %d %+v", code, bad)
	}

	// Thread two's worktree holds uncommitted work: deleting it with its
	// worktree is refused (the thread stays), then forced.
	if code := e.api("DELETE", "/api/threads/"+string(two.ID)+"?remove_worktree=1", nil, &bad); code != 409 || bad.Error.Code != gitwork.CodeWorktreeDirty {
		t.Fatalf("delete with a dirty worktree: %d %+v", code, bad)
	}
	if code := e.api("GET", "/api/threads/"+string(two.ID), nil, nil); code != 200 {
		t.Fatalf("the thread was deleted: %d", code)
	}
	if code := e.api("DELETE", "/api/threads/"+string(two.ID)+"?remove_worktree=1&force=1", nil, nil); code != 200 {
		t.Fatalf("forced delete: %d", code)
	}
	if _, err := os.Stat(two.Worktree); !os.IsNotExist(err) {
		t.Fatalf("the worktree is still there: %v", err)
	}
	// Thread one's is clean (committed): removed without force.
	if code := e.api("DELETE", "/api/threads/"+string(one.ID)+"?remove_worktree=1", nil, nil); code != 200 {
		t.Fatalf("delete: %d", code)
	}
	if _, err := os.Stat(one.Worktree); !os.IsNotExist(err) {
		t.Fatalf("the worktree is still there: %v", err)
	}
}

// A thread outside git: its changes are a clear 409, and a worktree cannot
// be asked for there.
func TestThreadChangesOutsideGit(t *testing.T) {
	gitEnv(t)
	e := startDaemon(t, nil)
	c := e.dial("x", -1)
	c.WaitFor(0, 10*time.Second, chatsock.Type(chat.TypeReplayDone), "ready")
	c.Send(chatsock.Msg("m1", "hello"))
	i := c.WaitFor(0, 10*time.Second, chatsock.PromptDone("m1", chat.StopEndTurn), "a turn")
	var bad apiError
	if code := e.api("GET", "/api/threads/"+string(c.Get(i).Thread)+"/changes", nil, &bad); code != 409 || bad.Error.Code != gitwork.CodeNotRepo {
		t.Fatalf("changes outside git: %d %+v", code, bad)
	}
	c.Send(map[string]any{"type": "message", "message_id": "m2", "text": "hi",
		"intent": map[string]any{"new": map[string]any{"cwd": e.root, "agent": "echo", "worktree": true}}})
	c.WaitFor(0, 10*time.Second, chatsock.Type(chat.TypeError), "a worktree outside git refused")
}

// At a cluster's hub, a node's thread's change is read on its machine and
// answered as the node's own (nodeship_test.go ships it).
func TestNodeThreadChangesAtTheHub(t *testing.T) {
	gitEnv(t)
	hub := startHub(t)
	b := joinNode(t, hub, "b")
	gitIn(t, b.root, "init", "-q", "-b", "main")
	writeFile(t, filepath.Join(b.root, "a.txt"), "one\n")
	gitIn(t, b.root, "add", "-A")
	gitIn(t, b.root, "commit", "-qm", "first")
	base := gitIn(t, b.root, "rev-parse", "HEAD")

	s := hub.dial("desk", -1)
	s.WaitFor(0, 10*time.Second, chatsock.Type(chat.TypeReplayDone), "ready")
	s.Send(map[string]any{"type": "message", "message_id": "m1", "text": "say hi",
		"intent": map[string]any{"new": map[string]any{"cwd": b.root, "node": "b"}}})
	s.WaitFor(0, 10*time.Second, chatsock.PromptDone("m1", chat.StopEndTurn), "b's first turn at the hub")
	id := s.Get(s.WaitFor(0, 10*time.Second, func(e client.Event) bool { return shownThread(e) != "" }, "the route's thread"))
	th := shownThread(id)
	if !strings.HasSuffix(string(th), "@b") {
		t.Fatalf("thread %s is not b's", th)
	}
	writeFile(t, filepath.Join(b.root, "a.txt"), "one\ntwo\n")
	var c gitwork.Changes
	if code := hub.api("GET", "/api/threads/"+string(th)+"/changes", nil, &c); code != 200 {
		t.Fatalf("changes at the hub: %d", code)
	}
	if c.Base != base || c.Patch != gitIn(t, b.root, "diff", base)+"\n" || len(c.Files) != 1 {
		t.Fatalf("b's thread's change at the hub (base %s):\n%s", c.Base, c.Patch)
	}
	var bad apiError
	if code := hub.api("GET", "/api/threads/"+string(th)+"/changes?path=../x", nil, &bad); code != 400 {
		t.Fatalf("a bad path through the hub: %d %+v", code, bad)
	}
}
