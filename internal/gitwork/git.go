// Package gitwork is what parley does with a thread's git repository: the
// base recorded at its start, its whole change since (the diff a person
// reviews), a worktree of its own, and shipping it (commit, push, pull
// request). Git is only ever run as argv (`git -C DIR …`), never through a
// shell, with the person's own config, credentials and hooks; nothing may
// wait for a password (GIT_TERMINAL_PROMPT=0).
package gitwork

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Error is a git action that did not happen, with a code a client can act on
// and git's own words.
type Error struct {
	Code    string // not_a_repository, nothing_to_commit, commit_failed, no_remote, detached, push_rejected, push_failed, pr_failed, worktree_dirty, git_failed
	Message string
}

func (e *Error) Error() string { return e.Message }

// The codes of Error.
const (
	CodeNotRepo         = "not_a_repository"
	CodeNothingToCommit = "nothing_to_commit"
	CodeCommitFailed    = "commit_failed"
	CodeNoRemote        = "no_remote"
	CodeDetached        = "detached"
	CodePushRejected    = "push_rejected"
	CodePushFailed      = "push_failed"
	CodePRFailed        = "pr_failed"
	CodeWorktreeDirty   = "worktree_dirty"
	CodeGitFailed       = "git_failed"
)

func errorf(code, format string, args ...any) error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// CodeOf is err's code, "" when err is no *Error.
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// env is the environment every git and gh process gets: the person's own,
// with prompts off so a missing credential fails instead of hanging.
func env() []string {
	return append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GCM_INTERACTIVE=never", "GH_PROMPT_DISABLED=1")
}

// result is one finished git run.
type result struct {
	out  []byte
	err  []byte
	code int // exit status; -1 when it could not run
}

// run runs `git -C dir args…` and returns what it printed; a non-zero exit is
// not an error here (callers judge it), only a git that could not run. A dir
// that is gone is git's to say (not a repository), so git starts anywhere.
func run(ctx context.Context, dir string, stdin []byte, args ...string) (result, error) {
	return runProgram(ctx, "git", "", stdin, append([]string{"-C", dir}, args...)...)
}

// runProgram runs program in dir ("" : parley's own).
func runProgram(ctx context.Context, program, dir string, stdin []byte, args ...string) (result, error) {
	cmd := exec.CommandContext(ctx, program, args...)
	cmd.Dir = dir
	cmd.Env = env()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return result{out: out.Bytes(), err: errb.Bytes()}, nil
	case errors.As(err, &exit) && ctx.Err() == nil:
		return result{out: out.Bytes(), err: errb.Bytes(), code: exit.ExitCode()}, nil
	case ctx.Err() != nil:
		return result{code: -1}, ctx.Err()
	default:
		return result{code: -1}, fmt.Errorf("gitwork: run %s: %w", program, err)
	}
}

// git runs git and wants exit 0: its output, or an error with git's words.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	r, err := run(ctx, dir, nil, args...)
	if err != nil {
		return "", err
	}
	if r.code != 0 {
		return "", errorf(CodeGitFailed, "git %s: %s", args[0], words(r))
	}
	return strings.TrimRight(string(r.out), "\n"), nil
}

// words is what a failed run said, for a person.
func words(r result) string {
	w := strings.TrimSpace(string(r.err))
	if w == "" {
		w = strings.TrimSpace(string(r.out))
	}
	if w == "" {
		w = fmt.Sprintf("exit status %d", r.code)
	}
	return w
}

// Top is the top directory of the repository holding dir (its worktree's).
func Top(ctx context.Context, dir string) (string, error) {
	r, err := run(ctx, dir, nil, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", err
	}
	if r.code != 0 || len(bytes.TrimSpace(r.out)) == 0 {
		return "", errorf(CodeNotRepo, "%s is not in a git repository", dir)
	}
	return strings.TrimSpace(string(r.out)), nil
}

// Head is the commit HEAD names in dir's repository, "" when dir is not in
// one or the repository has no commit yet: the base a thread records at its
// start.
func Head(ctx context.Context, dir string) string {
	r, err := run(ctx, dir, nil, "rev-parse", "--verify", "-q", "HEAD")
	if err != nil || r.code != 0 {
		return ""
	}
	return strings.TrimSpace(string(r.out))
}

// branch is the branch checked out in dir, "" when detached.
func branch(ctx context.Context, dir string) string {
	r, err := run(ctx, dir, nil, "symbolic-ref", "-q", "--short", "HEAD")
	if err != nil || r.code != 0 {
		return ""
	}
	return strings.TrimSpace(string(r.out))
}

// upstream is the branch's upstream (origin/main), "" when none.
func upstream(ctx context.Context, dir string) string {
	r, err := run(ctx, dir, nil, "rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{upstream}")
	if err != nil || r.code != 0 {
		return ""
	}
	return strings.TrimSpace(string(r.out))
}
