package daemon_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/filetree"
	"github.com/parleyhq/parley/internal/gitwork"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
)

// nodeRepo makes a git repository in b's work folder with one commit on
// main, pushed to a bare remote (origin); it returns the repository and
// the remote.
func nodeRepo(t *testing.T, b *testEnv) (repo, bare string) {
	t.Helper()
	repo = filepath.Join(b.root, "proj")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	gitIn(t, repo, "init", "-q", "-b", "main")
	writeFile(t, filepath.Join(repo, "a.txt"), "one\n")
	writeFile(t, filepath.Join(repo, ".gitignore"), "secret.env\n")
	gitIn(t, repo, "add", "-A")
	gitIn(t, repo, "commit", "-qm", "first")
	bare = filepath.Join(t.TempDir(), "origin.git")
	gitIn(t, repo, "init", "-q", "--bare", "-b", "main", bare)
	gitIn(t, repo, "remote", "add", "origin", bare)
	gitIn(t, repo, "push", "-q", "-u", "origin", "main")
	return repo, bare
}

// nodeThread starts a thread on machine b in dir from the hub and returns
// its id at the hub.
func nodeThread(t *testing.T, hub *testEnv, dir string) chat.ThreadID {
	t.Helper()
	s := hub.dial("desk", -1)
	s.WaitFor(0, 10*time.Second, chatsock.Type(chat.TypeReplayDone), "ready")
	s.Send(map[string]any{"type": "message", "message_id": "m1", "text": "say hi",
		"intent": map[string]any{"new": map[string]any{"cwd": dir, "node": "b"}}})
	s.WaitFor(0, 10*time.Second, chatsock.PromptDone("m1", chat.StopEndTurn), "b's first turn at the hub")
	th := shownThread(s.Get(s.WaitFor(0, 10*time.Second, func(e client.Event) bool { return shownThread(e) != "" }, "the route's thread")))
	if !strings.HasSuffix(string(th), "@b") {
		t.Fatalf("thread %s is not b's", th)
	}
	return th
}

// At a cluster's hub, a node's thread is committed, pushed and given its
// pull request on its own machine, in its own working tree, with the
// node's words when git refuses (a hook, a rejected push, no remote); a
// commit asked again with the same request_id, also after the node
// restarted, is answered, not made twice;
// with its machine away the answer says so and nothing half happens.
func TestNodeThreadShipsAtTheHub(t *testing.T) {
	gitEnv(t) // t.Setenv: not parallel
	hub := startHub(t)
	b := joinNode(t, hub, "b")
	repo, bare := nodeRepo(t, b)
	th := nodeThread(t, hub, repo)
	at := func(what string) string { return "/api/threads/" + string(th) + "/" + what }
	var bad apiError

	// A commit, then the same request again after more work: one commit,
	// the first answer, the new work left alone.
	writeFile(t, filepath.Join(repo, "a.txt"), "one\ntwo\n")
	var c1, c2 gitwork.Committed
	if code := hub.api("POST", at("commit"), map[string]any{"message": "Add two", "request_id": "r1"}, &c1); code != 200 || c1.Commit == "" || c1.Branch != "main" {
		t.Fatalf("commit at the hub: %d %+v", code, c1)
	}
	if head := gitIn(t, repo, "rev-parse", "HEAD"); head != c1.Commit || gitIn(t, repo, "log", "-1", "--format=%s") != "Add two" {
		t.Fatalf("b's HEAD is %s, the hub said %s", head, c1.Commit)
	}
	writeFile(t, filepath.Join(repo, "b.txt"), "more\n")
	if code := hub.api("POST", at("commit"), map[string]any{"message": "Add two", "request_id": "r1"}, &c2); code != 200 || c2 != c1 {
		t.Fatalf("the same commit asked again: %d %+v, want the first answer %+v", code, c2, c1)
	}
	if n := gitIn(t, repo, "rev-list", "--count", "HEAD"); n != "2" {
		t.Fatalf("b's branch has %s commits after one commit asked twice, want 2", n)
	}
	// b restarts (its memory of the request with it): asked again, still
	// the first answer, and b.txt still not committed.
	b.stop()
	b.start()
	waitMachine(t, hub, "b", true)
	var c3 gitwork.Committed
	if code := hub.api("POST", at("commit"), map[string]any{"message": "Add two", "request_id": "r1"}, &c3); code != 200 || c3 != c1 {
		t.Fatalf("the same commit asked again after b restarted: %d %+v, want the first answer %+v", code, c3, c1)
	}
	if n := gitIn(t, repo, "rev-list", "--count", "HEAD"); n != "2" {
		t.Fatalf("b's branch has %s commits after one commit asked again across b's restart, want 2", n)
	}

	// A request_id past 128 bytes is refused before anything is asked.
	if code := hub.api("POST", at("commit"), map[string]any{"message": "Add b", "request_id": strings.Repeat("r", 129)}, &bad); code != 400 ||
		!strings.Contains(bad.Error.Message, "request_id is longer than 128 bytes") {
		t.Fatalf("a commit with a long request_id: %d %+v", code, bad)
	}
	if st := gitIn(t, repo, "status", "--porcelain"); st != "?? b.txt" {
		t.Fatalf("after the refused request b's status is %q", st)
	}

	// The person's hook refuses: the node's words, nothing committed.
	hook := filepath.Join(repo, ".git", "hooks", "pre-commit")
	writeFile(t, hook, "#!/bin/sh\necho 'lint: b.txt is not allowed' >&2\nexit 1\n")
	if err := os.Chmod(hook, 0o755); err != nil {
		t.Fatal(err)
	}
	if code := hub.api("POST", at("commit"), map[string]any{"message": "Add b"}, &bad); code != 409 || bad.Error.Code != gitwork.CodeCommitFailed ||
		!strings.Contains(bad.Error.Message, "machine b") || !strings.Contains(bad.Error.Message, "b.txt is not allowed") {
		t.Fatalf("a failing hook at the hub: %d %+v", code, bad)
	}
	if st := gitIn(t, repo, "status", "--porcelain"); st != "?? b.txt" {
		t.Fatalf("after the refused commit b's status is %q", st)
	}
	if err := os.Remove(hook); err != nil {
		t.Fatal(err)
	}

	// Push: the remote has b's commit.
	var pushed gitwork.Pushed
	if code := hub.api("POST", at("push"), map[string]any{}, &pushed); code != 200 || pushed.Remote != "origin" || pushed.Branch != "main" {
		t.Fatalf("push at the hub: %d %+v", code, pushed)
	}
	if got := gitIn(t, bare, "rev-parse", "main"); got != c1.Commit {
		t.Fatalf("the remote's main is %s, want %s", got, c1.Commit)
	}

	// Someone else pushes first: b's push is rejected, in git's words.
	other := filepath.Join(t.TempDir(), "other")
	gitIn(t, repo, "clone", "-q", bare, other)
	writeFile(t, filepath.Join(other, "c.txt"), "theirs\n")
	gitIn(t, other, "add", "-A")
	gitIn(t, other, "commit", "-qm", "theirs")
	gitIn(t, other, "push", "-q", "origin", "main")
	if code := hub.api("POST", at("commit"), map[string]any{"message": "Add b"}, nil); code != 200 {
		t.Fatalf("commit: %d", code)
	}
	if code := hub.api("POST", at("push"), map[string]any{}, &bad); code != 409 || bad.Error.Code != gitwork.CodePushRejected ||
		!strings.Contains(bad.Error.Message, "machine b") || !strings.Contains(bad.Error.Message, "rejected") {
		t.Fatalf("a conflicting push at the hub: %d %+v", code, bad)
	}

	// A local remote has no page for a pull request; no remote at all says so.
	if code := hub.api("POST", at("pr"), map[string]any{}, &bad); code != 409 || bad.Error.Code != gitwork.CodeNoRemote || !strings.Contains(bad.Error.Message, "machine b") {
		t.Fatalf("a pull request to a local remote: %d %+v", code, bad)
	}
	gitIn(t, repo, "remote", "remove", "origin")
	if code := hub.api("POST", at("push"), map[string]any{}, &bad); code != 409 || bad.Error.Code != gitwork.CodeNoRemote || !strings.Contains(bad.Error.Message, "git remote add") {
		t.Fatalf("a push without a remote at the hub: %d %+v", code, bad)
	}

	// b goes away: a clear answer naming it, and nothing done.
	writeFile(t, filepath.Join(repo, "d.txt"), "while away\n")
	b.stop()
	waitMachine(t, hub, "b", false)
	if code := hub.api("POST", at("commit"), map[string]any{"message": "away"}, &bad); code != 503 || bad.Error.Code != "machine_offline" || !strings.Contains(bad.Error.Message, "b") {
		t.Fatalf("a commit with b away: %d %+v", code, bad)
	}
	if n := gitIn(t, repo, "rev-list", "--count", "HEAD"); n != "3" {
		t.Fatalf("b's branch has %s commits, want 3", n)
	}
}

// At the hub a node's thread's files are read on its node: the listing
// without what git ignores, a file's text, an image's bytes; every way out
// of the thread's directory refused as on the node itself.
func TestNodeThreadFilesAtTheHub(t *testing.T) {
	gitEnv(t)
	hub := startHub(t)
	b := joinNode(t, hub, "b")
	repo, _ := nodeRepo(t, b)
	writeFile(t, filepath.Join(repo, "secret.env"), "TOKEN=x\n")
	png := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82"
	writeFile(t, filepath.Join(repo, "dot.png"), png)
	th := nodeThread(t, hub, repo)
	files := "/api/threads/" + string(th) + "/files"

	var v filetree.View
	if code := hub.api("GET", files, nil, &v); code != 200 || v.Kind != "dir" {
		t.Fatalf("b's thread's folder at the hub: %d %+v", code, v)
	}
	var names []string
	for _, e := range v.Entries {
		names = append(names, e.Name)
	}
	if got := strings.Join(names, " "); got != ".gitignore a.txt dot.png" {
		t.Fatalf("the listing at the hub: %q, want .gitignore a.txt dot.png", got)
	}
	v = filetree.View{}
	if code := hub.api("GET", files+"?path=a.txt", nil, &v); code != 200 || v.Text == nil || *v.Text != "one\n" {
		t.Fatalf("a.txt at the hub: %d %+v", code, v)
	}
	var bad apiError
	if code := hub.api("GET", files+"?path=secret.env", nil, &bad); code != 404 || strings.Contains(bad.Error.Message, "TOKEN") {
		t.Fatalf("an ignored file at the hub: %d %+v", code, bad)
	}
	for _, p := range []string{"..", "../data/parley.db", "/etc/passwd"} {
		if code := hub.api("GET", files+"?path="+p, nil, &bad); code != 403 {
			t.Errorf("%s at the hub: %d %+v, want 403", p, code, bad)
		}
	}
	req, _ := http.NewRequest("GET", hub.url()+files+"?path=dot.png&raw=1", nil)
	req.Header.Set("Authorization", "Bearer "+hub.d.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/png" || string(body) != png {
		t.Fatalf("the image raw at the hub: %d %s, %d bytes", resp.StatusCode, resp.Header.Get("Content-Type"), len(body))
	}
}

// standInGh puts a program named gh first on PATH, for this test only: it
// records its argv (NUL-separated) and folder, says it is signed in when
// signedIn exists, and answers `gh pr create` as gh does, with the pull
// request's URL on its standard output.
func standInGh(t *testing.T) (argv, signedIn string) {
	t.Helper()
	dir := t.TempDir()
	argv, signedIn = filepath.Join(dir, "argv"), filepath.Join(dir, "signed-in")
	script := `#!/bin/sh
if [ "$1" = auth ]; then
	[ -e '` + signedIn + `' ] && exit 0
	echo 'You are not logged into any GitHub hosts. To log in, run: gh auth login' >&2
	exit 1
fi
printf '%s\0' "$PWD" "$@" > '` + argv + `'
echo 'Creating pull request for feature into main in acme/proj' >&2
echo 'https://github.com/acme/proj/pull/7'
`
	writeFile(t, filepath.Join(dir, "gh"), script)
	if err := os.Chmod(filepath.Join(dir, "gh"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return argv, signedIn
}

// A node's thread's pull request at the hub: with gh signed in on the
// node, `gh pr create` is run there as argv with the branch, title and
// body, and its URL is the answer; with gh not signed in, the remote's
// compare page is, and gh creates nothing.
func TestNodeThreadPullRequestWithGh(t *testing.T) {
	gitEnv(t)
	argv, signedIn := standInGh(t)
	hub := startHub(t)
	b := joinNode(t, hub, "b")
	repo, _ := nodeRepo(t, b)
	gitIn(t, repo, "remote", "set-url", "origin", "git@github.com:acme/proj.git")
	gitIn(t, repo, "switch", "-q", "-c", "feature")
	th := nodeThread(t, hub, repo)
	pr := "/api/threads/" + string(th) + "/pr"

	var got gitwork.PullRequest
	if code := hub.api("POST", pr, map[string]any{"title": "Fix it"}, &got); code != 200 || got.Created ||
		got.URL != "https://github.com/acme/proj/compare/main...feature?expand=1" {
		t.Fatalf("gh not signed in: %d %+v, want the compare page", code, got)
	}
	if _, err := os.Stat(argv); !os.IsNotExist(err) {
		t.Fatalf("gh pr create ran while gh was not signed in: %v", err)
	}

	writeFile(t, signedIn, "")
	body := "Line one\nline two; $(not run) `nor this`"
	if code := hub.api("POST", pr, map[string]any{"title": "Fix it", "body": body}, &got); code != 200 || !got.Created ||
		got.URL != "https://github.com/acme/proj/pull/7" {
		t.Fatalf("gh signed in: %d %+v, want the URL gh printed", code, got)
	}
	data, err := os.ReadFile(argv)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{repo, "pr", "create", "--head", "feature", "--title", "Fix it", "--body", body}
	if args := strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00"); strings.Join(args, "|") != strings.Join(want, "|") {
		t.Fatalf("gh ran in and with %q, want %q", args, want)
	}

	// Without a title gh fills it from the commits.
	if code := hub.api("POST", pr, map[string]any{}, &got); code != 200 || !got.Created {
		t.Fatalf("gh without a title: %d %+v", code, got)
	}
	if data, _ := os.ReadFile(argv); !strings.HasSuffix(string(data), "\x00pr\x00create\x00--head\x00feature\x00--fill\x00") {
		t.Fatalf("gh without a title ran with %q", data)
	}
}
