package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/testkit/scriptd"
)

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// parley diff prints the thread's change as git diff of its base prints it
// (untracked files after), --stat a line per file; commit, push and pr each
// say what they did, or fail with git's reason and a non-zero exit.
func TestDiffCommitPushPR(t *testing.T) {
	home := t.TempDir() // t.Setenv: not parallel
	for k, v := range map[string]string{"HOME": home, "XDG_CONFIG_HOME": home, "GIT_CONFIG_NOSYSTEM": "1",
		"GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@example.com"} {
		t.Setenv(k, v)
	}
	// git on PATH, gh not: the pull request is the compare page on any machine.
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	bin := t.TempDir()
	if err := os.Symlink(gitPath, filepath.Join(bin, "git")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	r := scriptd.Start(t, nil)
	gitIn(t, r.Work, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(r.Work, "a.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, r.Work, "add", "-A")
	gitIn(t, r.Work, "commit", "-qm", "first")
	base := strings.TrimSpace(gitIn(t, r.Work, "rev-parse", "HEAD"))
	d := r.D()
	th := string(threadOf(t, d, "c1")) // starts in the root: the repository
	srv := []string{"--server", "http://" + d.Addr(), "--token", d.Token()}
	run := func(args ...string) (int, string, string) {
		return parley(append(append([]string{args[0]}, srv...), args[1:]...)...)
	}

	if err := os.WriteFile(filepath.Join(r.Work, "a.txt"), []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.Work, "b.txt"), []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run("diff", th)
	want := gitIn(t, r.Work, "diff", base)
	untracked, _ := exec.Command("git", "-C", r.Work, "diff", "--no-index", "/dev/null", "b.txt").Output()
	if code != 0 || out != want+string(untracked) {
		t.Fatalf("diff: %d %q\n%s\nwant:\n%s%s", code, errs, out, want, untracked)
	}
	code, out, _ = run("diff", th, "--stat")
	if code != 0 || !strings.Contains(out, "modified   +1 -0        a.txt") || !strings.Contains(out, "untracked  +1 -0        b.txt") {
		t.Fatalf("diff --stat: %d\n%s", code, out)
	}

	if code, _, errs = run("push", th); code == 0 || !strings.Contains(errs, "no remote") {
		t.Fatalf("push without a remote: %d %q", code, errs)
	}
	code, out, errs = run("commit", th, "-m", "Add two")
	if code != 0 || !strings.Contains(out, "committed on main") || !strings.Contains(out, "Add two") {
		t.Fatalf("commit: %d %q %q", code, out, errs)
	}
	bare := filepath.Join(t.TempDir(), "origin.git")
	gitIn(t, r.Work, "init", "-q", "--bare", bare)
	gitIn(t, r.Work, "remote", "add", "origin", bare)
	if code, out, errs = run("push", th); code != 0 || out != "pushed main to origin\n" {
		t.Fatalf("push: %d %q %q", code, out, errs)
	}
	gitIn(t, r.Work, "remote", "set-url", "origin", "https://github.com/someone/project.git")
	code, out, errs = run("pr", th)
	if code != 0 || !strings.Contains(out, "https://github.com/someone/project/compare/main...main?expand=1") {
		t.Fatalf("pr: %d %q %q", code, out, errs)
	}
}
