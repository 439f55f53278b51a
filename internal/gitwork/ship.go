package gitwork

import (
	"context"
	"fmt"
	"net/url"
	"os/exec"
	"strings"
)

// Committed is a commit made.
type Committed struct {
	Commit  string `json:"commit"`
	Branch  string `json:"branch"`
	Summary string `json:"summary"` // git's own line: "[main 1a2b3c4] the message"
}

// Commit stages everything in dir's working tree (untracked files too,
// .gitignore respected) and commits it with message; the person's hooks run.
// When it does not happen the index is left as it was before.
func Commit(ctx context.Context, dir, message string) (Committed, error) {
	if strings.TrimSpace(message) == "" {
		return Committed{}, errorf("bad_input", "a commit needs a message")
	}
	top, err := Top(ctx, dir)
	if err != nil {
		return Committed{}, err
	}
	// The index as it is, to put back if the commit does not happen
	// (write-tree refuses an index with conflicts: nothing is committed then).
	saved, err := git(ctx, top, "write-tree")
	if err != nil {
		return Committed{}, errorf(CodeCommitFailed, "the index cannot be committed (unresolved conflicts?): %v", err)
	}
	restore := func() { _, _ = git(context.WithoutCancel(ctx), top, "read-tree", saved) }
	if _, err := git(ctx, top, "add", "-A"); err != nil {
		restore()
		return Committed{}, errorf(CodeCommitFailed, "%v", err)
	}
	r, err := run(ctx, top, nil, "diff", "--cached", "--quiet")
	if err != nil {
		restore()
		return Committed{}, err
	}
	if r.code == 0 && Head(ctx, top) != "" {
		restore()
		return Committed{}, errorf(CodeNothingToCommit, "nothing to commit: the working tree is as HEAD has it")
	}
	r, err = run(ctx, top, []byte(message), "commit", "-q", "-F", "-")
	if err != nil || r.code != 0 {
		restore()
		if err != nil {
			return Committed{}, err
		}
		return Committed{}, errorf(CodeCommitFailed, "the commit was refused: %s", words(r))
	}
	c := Committed{Commit: Head(ctx, top), Branch: branch(ctx, top)}
	c.Summary, _ = git(ctx, top, "log", "-1", "--format=%h %s")
	return c, nil
}

// Pushed is a branch pushed.
type Pushed struct {
	Remote string `json:"remote"`
	Branch string `json:"branch"`
	Output string `json:"output"`
}

// remoteOf is the remote dir's branch goes to: its upstream's, else origin,
// else the only one.
func remoteOf(ctx context.Context, top, br string) (string, error) {
	if r, err := git(ctx, top, "config", "--get", "branch."+br+".remote"); err == nil && r != "" && r != "." {
		return r, nil
	}
	out, err := git(ctx, top, "remote")
	if err != nil {
		return "", err
	}
	remotes := strings.Fields(out)
	for _, r := range remotes {
		if r == "origin" {
			return r, nil
		}
	}
	if len(remotes) == 1 {
		return remotes[0], nil
	}
	if len(remotes) == 0 {
		return "", errorf(CodeNoRemote, "the repository has no remote to push to (git remote add origin URL)")
	}
	return "", errorf(CodeNoRemote, "the branch %s has no upstream and there is no origin among the remotes %s: set one with git push -u REMOTE %s", br, strings.Join(remotes, ", "), br)
}

// Push pushes the branch checked out in dir to its remote, setting its
// upstream when it has none.
func Push(ctx context.Context, dir string) (Pushed, error) {
	top, err := Top(ctx, dir)
	if err != nil {
		return Pushed{}, err
	}
	br := branch(ctx, top)
	if br == "" {
		return Pushed{}, errorf(CodeDetached, "no branch is checked out (HEAD is detached): nothing to push")
	}
	remote, err := remoteOf(ctx, top, br)
	if err != nil {
		return Pushed{}, err
	}
	// Without an upstream, the branch of the same name, made the upstream;
	// with one, the branch it tracks (which may have another name).
	args := []string{"push", "--porcelain", "-u", remote, br}
	if upstream(ctx, top) != "" {
		if m, err := git(ctx, top, "config", "--get", "branch."+br+".merge"); err == nil && m != "" {
			args = []string{"push", "--porcelain", remote, "HEAD:" + m}
		}
	}
	r, err := run(ctx, top, nil, args...)
	if err != nil {
		return Pushed{}, err
	}
	out := strings.TrimSpace(string(r.out) + "\n" + string(r.err))
	if r.code != 0 {
		if strings.Contains(out, "[rejected]") || strings.Contains(out, "[remote rejected]") || strings.Contains(out, "non-fast-forward") {
			return Pushed{}, errorf(CodePushRejected, "the push to %s was rejected: %s", remote, out)
		}
		return Pushed{}, errorf(CodePushFailed, "the push to %s failed: %s", remote, out)
	}
	return Pushed{Remote: remote, Branch: br, Output: out}, nil
}

// PullRequest is a pull request opened, or the page where a person opens one.
type PullRequest struct {
	URL     string `json:"url"`
	Created bool   `json:"created"`
}

// PR opens a pull request for dir's branch with gh when it is installed and
// signed in, else answers the remote's compare page.
func PR(ctx context.Context, dir, title, body string) (PullRequest, error) {
	top, err := Top(ctx, dir)
	if err != nil {
		return PullRequest{}, err
	}
	br := branch(ctx, top)
	if br == "" {
		return PullRequest{}, errorf(CodeDetached, "no branch is checked out (HEAD is detached): a pull request needs one")
	}
	remote, err := remoteOf(ctx, top, br)
	if err != nil {
		return PullRequest{}, err
	}
	if ghReady(ctx, top) {
		args := []string{"pr", "create", "--head", br}
		if title != "" {
			args = append(args, "--title", title, "--body", body)
		} else {
			args = append(args, "--fill")
		}
		r, err := runProgram(ctx, "gh", top, nil, args...)
		if err != nil {
			return PullRequest{}, err
		}
		if r.code != 0 {
			return PullRequest{}, errorf(CodePRFailed, "gh pr create: %s", words(r))
		}
		lines := strings.Fields(string(r.out))
		if len(lines) == 0 {
			return PullRequest{}, errorf(CodePRFailed, "gh pr create said nothing: %s", words(r))
		}
		return PullRequest{URL: lines[len(lines)-1], Created: true}, nil
	}
	raw, err := git(ctx, top, "remote", "get-url", remote)
	if err != nil {
		return PullRequest{}, err
	}
	u, err := CompareURL(raw, defaultBranch(ctx, top, remote), br)
	if err != nil {
		return PullRequest{}, err
	}
	return PullRequest{URL: u}, nil
}

// ghReady says gh is installed and signed in for this repository's host.
func ghReady(ctx context.Context, top string) bool {
	if _, err := exec.LookPath("gh"); err != nil {
		return false
	}
	r, err := runProgram(ctx, "gh", top, nil, "auth", "status")
	return err == nil && r.code == 0
}

// defaultBranch is the remote's default branch (its HEAD), else main.
func defaultBranch(ctx context.Context, top, remote string) string {
	if out, err := git(ctx, top, "symbolic-ref", "--short", "refs/remotes/"+remote+"/HEAD"); err == nil {
		return strings.TrimPrefix(out, remote+"/")
	}
	return "main"
}

// CompareURL is the web page where a person opens a pull (merge) request of
// branch into base, from the remote's URL (https, ssh or scp-like).
func CompareURL(remote, base, branch string) (string, error) {
	host, repo := "", ""
	switch {
	case strings.Contains(remote, "://"):
		u, err := url.Parse(remote)
		if err != nil {
			return "", errorf(CodeNoRemote, "the remote's URL %q is not one a web page can be found for", remote)
		}
		if u.Scheme == "file" || u.Host == "" {
			return "", errorf(CodeNoRemote, "the remote %q is a local repository: it has no web page for a pull request", remote)
		}
		host, repo = u.Hostname(), strings.TrimPrefix(u.Path, "/")
	case strings.Contains(remote, ":") && !strings.HasPrefix(remote, "/"):
		at := remote[strings.LastIndex(remote[:strings.Index(remote, ":")], "@")+1:]
		host, repo, _ = strings.Cut(at, ":")
	default:
		return "", errorf(CodeNoRemote, "the remote %q is a local repository: it has no web page for a pull request", remote)
	}
	repo = strings.TrimSuffix(strings.TrimSuffix(repo, "/"), ".git")
	if host == "" || repo == "" {
		return "", errorf(CodeNoRemote, "the remote's URL %q names no repository", remote)
	}
	if strings.Contains(host, "gitlab") {
		return fmt.Sprintf("https://%s/%s/-/merge_requests/new?merge_request%%5Bsource_branch%%5D=%s&merge_request%%5Btarget_branch%%5D=%s",
			host, repo, url.QueryEscape(branch), url.QueryEscape(base)), nil
	}
	return fmt.Sprintf("https://%s/%s/compare/%s...%s?expand=1", host, repo, url.PathEscape(base), url.PathEscape(branch)), nil
}
