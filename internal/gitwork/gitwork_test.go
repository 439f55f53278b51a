package gitwork

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// repo makes a git repository in a temporary folder with one commit and
// answers its path. Tests run git with a config of their own only.
func repo(t *testing.T) string {
	t.Helper()
	isolate(t)
	dir := t.TempDir()
	sh(t, dir, "init", "-q", "-b", "main")
	write(t, dir, "a.txt", "one\ntwo\nthree\n")
	write(t, dir, "old.txt", strings.Repeat("keep this line\n", 20))
	write(t, dir, "gone.txt", "bye\n")
	write(t, dir, ".gitignore", "*.log\n")
	sh(t, dir, "add", "-A")
	sh(t, dir, "commit", "-q", "-m", "first")
	return dir
}

// isolate keeps the machine's git config out of the tests.
func isolate(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", home)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_AUTHOR_NAME", "Test")
	t.Setenv("GIT_AUTHOR_EMAIL", "test@example.com")
	t.Setenv("GIT_COMMITTER_NAME", "Test")
	t.Setenv("GIT_COMMITTER_EMAIL", "test@example.com")
	t.Setenv("PATH", pathWithoutGh(t))
}

// pathWithoutGh keeps git on PATH but not gh, so a pull request is the
// compare page whatever the machine has.
func pathWithoutGh(t *testing.T) string {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	bin := t.TempDir()
	if err := os.Symlink(gitPath, filepath.Join(bin, "git")); err != nil {
		t.Fatal(err)
	}
	return bin
}

func sh(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// gitOut runs git and answers its stdout whatever its exit status (git diff
// --no-index exits 1 for a difference).
func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	var out bytes.Buffer
	cmd.Stdout = &out
	_ = cmd.Run()
	return out.String()
}

func write(t *testing.T, dir, name, text string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// edit changes the repository every way a thread's change can: a commit
// since the base, a modified file, a deleted one, a rename, untracked files
// (one binary), an ignored one.
func edit(t *testing.T, dir string) {
	write(t, dir, "a.txt", "one\n2\nthree\nfour\n")
	sh(t, dir, "commit", "-qam", "since the base")
	write(t, dir, "a.txt", "one\n2\nthree\nfour\nfive\n")
	sh(t, dir, "rm", "-q", "gone.txt")
	sh(t, dir, "mv", "old.txt", "renamed.txt")
	write(t, dir, "new/file.go", "package x\n")
	write(t, dir, "pic.bin", "\x00\x01\x02binary")
	write(t, dir, "debug.log", "ignored\n")
}

func TestDiffIsGitDiffPlusUntracked(t *testing.T) {
	ctx := context.Background()
	dir := repo(t)
	base := Head(ctx, dir)
	edit(t, dir)
	c, err := Diff(ctx, filepath.Join(dir, "new"), Query{Base: base}) // from below the top too
	if err != nil {
		t.Fatal(err)
	}
	want := gitOut(t, dir, "diff", base) +
		gitOut(t, dir, "diff", "--no-index", "/dev/null", "new/file.go") +
		gitOut(t, dir, "diff", "--no-index", "/dev/null", "pic.bin")
	if c.Patch != want {
		t.Fatalf("patch differs from git diff BASE plus the untracked files:\ngot:\n%s\nwant:\n%s", c.Patch, want)
	}
	if c.More || c.NextOffset != len(want) {
		t.Fatalf("one page expected: more %v next %d of %d", c.More, c.NextOffset, len(want))
	}
	// Read from a folder below the top, the change says where the folder is,
	// so a file's path can be named as the thread's Files view names it.
	if c.Dir != "new" {
		t.Fatalf("dir %q, want new (the thread's folder from the top)", c.Dir)
	}
	got := map[string]File{}
	var order []string
	for _, f := range c.Files {
		got[f.Path] = f
		order = append(order, f.Path)
	}
	if strings.Join(order, " ") != "a.txt gone.txt renamed.txt new/file.go pic.bin" {
		t.Fatalf("files %v", order)
	}
	if f := got["a.txt"]; f.Status != "modified" || f.Additions != 3 || f.Deletions != 1 {
		t.Errorf("a.txt: %+v", f)
	}
	if f := got["gone.txt"]; f.Status != "deleted" || f.Deletions != 1 {
		t.Errorf("gone.txt: %+v", f)
	}
	if f := got["renamed.txt"]; f.Status != "renamed" || f.OldPath != "old.txt" {
		t.Errorf("renamed.txt: %+v", f)
	}
	if f := got["new/file.go"]; f.Status != "untracked" || f.Additions != 1 || f.Binary {
		t.Errorf("new/file.go: %+v", f)
	}
	if f := got["pic.bin"]; !f.Binary || f.Status != "untracked" {
		t.Errorf("pic.bin: %+v", f)
	}
	if _, ok := got["debug.log"]; ok || strings.Contains(c.Patch, "debug.log") {
		t.Error("an ignored file is shown")
	}
	if c.Branch != "main" || c.Head == base || c.Ahead != 1 || c.Behind != 0 || c.Upstream != "" {
		t.Errorf("branch %q head %q ahead %d behind %d upstream %q", c.Branch, c.Head, c.Ahead, c.Behind, c.Upstream)
	}

	one, err := Diff(ctx, dir, Query{Base: base, Path: "a.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if one.Dir != "" {
		t.Fatalf("dir %q at the top, want empty", one.Dir)
	}
	if len(one.Files) != 1 || one.Files[0].Path != "a.txt" || one.Patch != gitOut(t, dir, "diff", base, "--", "a.txt") {
		t.Fatalf("one file: %+v\n%s", one.Files, one.Patch)
	}
	one, err = Diff(ctx, dir, Query{Base: base, Path: "new/file.go"})
	if err != nil || len(one.Files) != 1 || one.Files[0].Status != "untracked" {
		t.Fatalf("one untracked file: %+v %v", one.Files, err)
	}
	if _, err := Diff(ctx, dir, Query{Path: "../elsewhere"}); CodeOf(err) != "bad_path" {
		t.Fatalf("a path outside: %v", err)
	}
}

func TestDiffPages(t *testing.T) {
	ctx := context.Background()
	dir := repo(t)
	base := Head(ctx, dir)
	write(t, dir, "a.txt", strings.Repeat("a changed line, é and all\n", 2000))
	var pages strings.Builder
	off := 0
	for n := 0; ; n++ {
		c, err := Diff(ctx, dir, Query{Base: base, Offset: off, PageBytes: 4096})
		if err != nil {
			t.Fatal(err)
		}
		if c.Offset != off || (c.More && !strings.HasSuffix(c.Patch, "\n")) {
			t.Fatalf("page %d from %d: offset %d, ends %q", n, off, c.Offset, c.Patch[max(0, len(c.Patch)-5):])
		}
		pages.WriteString(c.Patch)
		if !c.More {
			break
		}
		off = c.NextOffset
	}
	if pages.String() != gitOut(t, dir, "diff", base) {
		t.Fatal("the pages together are not the patch")
	}
}

func TestDiffOutsideGit(t *testing.T) {
	isolate(t)
	if _, err := Diff(context.Background(), t.TempDir(), Query{}); CodeOf(err) != CodeNotRepo {
		t.Fatalf("want %s, got %v", CodeNotRepo, err)
	}
}

func TestCommit(t *testing.T) {
	ctx := context.Background()
	dir := repo(t)
	if _, err := Commit(ctx, dir, "nothing"); CodeOf(err) != CodeNothingToCommit {
		t.Fatalf("nothing to commit: %v", err)
	}
	edit(t, dir)
	c, err := Commit(ctx, dir, "the change")
	if err != nil {
		t.Fatal(err)
	}
	if c.Branch != "main" || c.Commit != Head(ctx, dir) || !strings.Contains(c.Summary, "the change") {
		t.Fatalf("%+v", c)
	}
	if st := gitOut(t, dir, "status", "--porcelain"); st != "" {
		t.Fatalf("left behind after the commit:\n%s", st)
	}
	if files := gitOut(t, dir, "show", "--name-only", "--format=", "HEAD"); !strings.Contains(files, "new/file.go") || strings.Contains(files, "debug.log") {
		t.Fatalf("committed files:\n%s", files)
	}
}

func TestCommitHookFails(t *testing.T) {
	ctx := context.Background()
	dir := repo(t)
	hook := filepath.Join(dir, ".git", "hooks", "pre-commit")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho 'lint: trailing space in a.txt' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "a.txt", "changed\n")
	write(t, dir, "staged.txt", "staged by the person\n")
	sh(t, dir, "add", "staged.txt")
	write(t, dir, "untracked.txt", "new\n")
	before := gitOut(t, dir, "status", "--porcelain")
	head := Head(ctx, dir)
	_, err := Commit(ctx, dir, "refused")
	if CodeOf(err) != CodeCommitFailed || !strings.Contains(err.Error(), "lint: trailing space") {
		t.Fatalf("want commit_failed with the hook's words, got %v", err)
	}
	if Head(ctx, dir) != head {
		t.Fatal("a commit was made")
	}
	if after := gitOut(t, dir, "status", "--porcelain"); after != before {
		t.Fatalf("the index changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// remote makes a bare repository, the clone's origin, with main pushed.
func remote(t *testing.T, dir string) string {
	bare := filepath.Join(t.TempDir(), "origin.git")
	sh(t, dir, "init", "-q", "--bare", bare)
	sh(t, dir, "remote", "add", "origin", bare)
	sh(t, dir, "push", "-q", "-u", "origin", "main")
	return bare
}

func TestPush(t *testing.T) {
	ctx := context.Background()
	dir := repo(t)
	if _, err := Push(ctx, dir); CodeOf(err) != CodeNoRemote {
		t.Fatalf("no remote: %v", err)
	}
	bare := remote(t, dir)
	sh(t, dir, "checkout", "-q", "-b", "feature")
	write(t, dir, "a.txt", "feature\n")
	sh(t, dir, "commit", "-qam", "feature")
	p, err := Push(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if p.Remote != "origin" || p.Branch != "feature" {
		t.Fatalf("%+v", p)
	}
	if got := strings.TrimSpace(gitOut(t, bare, "rev-parse", "feature")); got != Head(ctx, dir) {
		t.Fatalf("the remote's feature is %q", got)
	}
	if up := upstream(ctx, dir); up != "origin/feature" {
		t.Fatalf("upstream %q", up)
	}

	// Someone else pushes to feature: ours is no longer a fast-forward.
	other := filepath.Join(t.TempDir(), "other")
	sh(t, dir, "clone", "-q", "-b", "feature", bare, other)
	write(t, other, "a.txt", "theirs\n")
	sh(t, other, "commit", "-qam", "theirs")
	sh(t, other, "push", "-q")
	write(t, dir, "a.txt", "ours\n")
	sh(t, dir, "commit", "-qam", "ours")
	if _, err := Push(ctx, dir); CodeOf(err) != CodePushRejected || !strings.Contains(err.Error(), "rejected") {
		t.Fatalf("want push_rejected, got %v", err)
	}

	sh(t, dir, "checkout", "-q", "--detach")
	if _, err := Push(ctx, dir); CodeOf(err) != CodeDetached {
		t.Fatalf("detached: %v", err)
	}
}

func TestPRWithoutGhIsTheComparePage(t *testing.T) {
	ctx := context.Background()
	dir := repo(t)
	sh(t, dir, "remote", "add", "origin", "git@github.com:someone/project.git")
	sh(t, dir, "checkout", "-q", "-b", "parley/fix-it-abc")
	pr, err := PR(ctx, dir, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if pr.Created || pr.URL != "https://github.com/someone/project/compare/main...parley%2Ffix-it-abc?expand=1" {
		t.Fatalf("%+v", pr)
	}
	for remote, want := range map[string]string{
		"https://github.com/o/r.git":       "https://github.com/o/r/compare/main...b?expand=1",
		"ssh://git@gitlab.com/g/sub/r.git": "https://gitlab.com/g/sub/r/-/merge_requests/new?merge_request%5Bsource_branch%5D=b&merge_request%5Btarget_branch%5D=main",
	} {
		if got, err := CompareURL(remote, "main", "b"); err != nil || got != want {
			t.Errorf("%s: %q %v", remote, got, err)
		}
	}
	if _, err := CompareURL("/srv/git/r.git", "main", "b"); CodeOf(err) != CodeNoRemote {
		t.Errorf("a local remote: %v", err)
	}
}

func TestWorktreesDoNotSeeEachOther(t *testing.T) {
	ctx := context.Background()
	dir := repo(t)
	write(t, dir, "sub/keep.txt", "x\n")
	sh(t, dir, "add", "-A")
	sh(t, dir, "commit", "-qm", "sub")
	one, err := AddWorktree(ctx, filepath.Join(dir, "sub"), "", "Fix the parser, please!", "t_ABCDEFGHIJKL")
	if err != nil {
		t.Fatal(err)
	}
	two, err := AddWorktree(ctx, dir, "", "Fix the parser, please!", "t_ZYXWVUTSRQPO")
	if err != nil {
		t.Fatal(err)
	}
	wantDir := filepath.Join(filepath.Dir(dir), filepath.Base(dir)+".parley-worktrees", "fix-the-parser-please-abcdefgh")
	if one.Dir != wantDir || one.Branch != "parley/fix-the-parser-please-abcdefgh" || one.Cwd != filepath.Join(wantDir, "sub") {
		t.Fatalf("%+v", one)
	}
	base := Head(ctx, dir)
	write(t, one.Dir, "a.txt", "one's\n")
	write(t, two.Dir, "a.txt", "two's\n")
	for _, w := range []struct {
		wt   Worktree
		mine string
	}{{one, "+one's"}, {two, "+two's"}} {
		c, err := Diff(ctx, w.wt.Cwd, Query{Base: base})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(c.Patch, w.mine) || strings.Contains(c.Patch, "+one's") == strings.Contains(c.Patch, "+two's") || c.Branch != w.wt.Branch {
			t.Fatalf("%s sees:\n%s", w.wt.Dir, c.Patch)
		}
	}
	if c, _ := Diff(ctx, dir, Query{Base: base}); c.Patch != "" {
		t.Fatalf("the main checkout sees:\n%s", c.Patch)
	}

	if err := RemoveWorktree(ctx, one.Dir, false); CodeOf(err) != CodeWorktreeDirty {
		t.Fatalf("a dirty worktree removed without force: %v", err)
	}
	if _, err := os.Stat(one.Dir); err != nil {
		t.Fatal("the dirty worktree is gone")
	}
	if err := RemoveWorktree(ctx, one.Dir, true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(one.Dir); !os.IsNotExist(err) {
		t.Fatal("the worktree is still there")
	}
	sh(t, dir, "rev-parse", "--verify", one.Branch) // its branch stays
	sh(t, two.Dir, "checkout", "--", "a.txt")
	if err := RemoveWorktree(ctx, two.Dir, false); err != nil {
		t.Fatal(err)
	}
}

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"Fix the parser, please!":               "fix-the-parser-please",
		"  ÉTÉ -- résumé  ":                     "t-r-sum",
		"a very long title that goes on and on": "a-very-long-title-that-goes-on-a",
		"!!!":                                   "",
	} {
		if got := Slug(in); got != want {
			t.Errorf("Slug(%q) = %q, want %q", in, got, want)
		}
	}
}

// A thread whose folder is gone is "not a repository", not a failure to run.
func TestDiffOfAFolderGone(t *testing.T) {
	isolate(t)
	if _, err := Diff(context.Background(), filepath.Join(t.TempDir(), "gone"), Query{}); CodeOf(err) != CodeNotRepo {
		t.Fatalf("want %s, got %v", CodeNotRepo, err)
	}
}
