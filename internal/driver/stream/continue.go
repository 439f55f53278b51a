package stream

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/claudecode"
)

// What the stream driver knows of Claude Code's own sessions, to continue one
// started in a terminal and to hand it back (driver.HistoryReader,
// RunChecker, HandBacker).

// FindTranscript is where session spec.ResumeID's transcript is, for a
// session run in spec.Cwd: the one place that finds it (the sessions index
// can answer here once every agent's sessions are indexed).
var FindTranscript = func(ctx context.Context, spec driver.Spec) (string, error) {
	for _, dir := range projectDirs(spec) {
		p := filepath.Join(dir, spec.ResumeID+".jsonl")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: Claude Code has no session %s in %s", driver.ErrHistoryLost, spec.ResumeID, spec.Cwd)
}

func checkSessionID(id string) error {
	if !claudecode.ValidSessionID(id) {
		return fmt.Errorf("%q is not a Claude Code session id (a UUID)", id)
	}
	return nil
}

// History implements driver.HistoryReader from the session's transcript.
func (d *Driver) History(ctx context.Context, spec driver.Spec) ([]driver.Turn, error) {
	if err := checkSessionID(spec.ResumeID); err != nil {
		return nil, err
	}
	path, err := FindTranscript(ctx, spec)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: Claude Code's transcript %s is gone", driver.ErrHistoryLost, path)
	}
	if err != nil {
		return nil, fmt.Errorf("stream: %w", err)
	}
	defer f.Close()
	turns, err := claudecode.History(f)
	if err != nil {
		return nil, fmt.Errorf("stream: reading %s: %w", path, err)
	}
	return turns, nil
}

// RunningNow implements driver.RunChecker from Claude Code's registry of
// running sessions.
func (d *Driver) RunningNow(ctx context.Context, spec driver.Spec) (int, error) {
	if err := checkSessionID(spec.ResumeID); err != nil {
		return 0, err
	}
	dir, err := configDir(spec)
	if err != nil {
		return 0, err
	}
	return claudecode.RunningSession(dir, spec.ResumeID)
}

// TakesTerminals implements driver.TerminalTaker: a Claude Code session
// running in a person's tmux pane is adopted, in a plain terminal watched.
func (d *Driver) TakesTerminals() {}

// ResumeCommand implements driver.HandBacker: Claude Code resumes a session
// only from the directory it ran in, and finds it under the same config
// folder (HOME or CLAUDE_CONFIG_DIR, said when parley gives its agent others).
func (d *Driver) ResumeCommand(spec driver.Spec) string {
	words := []string{}
	for _, key := range []string{"CLAUDE_CONFIG_DIR", "HOME"} {
		for i := len(spec.Env) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(spec.Env[i], key+"="); ok {
				if v != os.Getenv(key) {
					words = append(words, key+"="+v)
				}
				break
			}
		}
	}
	return driver.ShellLine("cd", spec.Cwd) + " && " + driver.ShellLine(append(words, "claude", "--resume", spec.ResumeID)...)
}

var (
	_ driver.HistoryReader = (*Driver)(nil)
	_ driver.RunChecker    = (*Driver)(nil)
	_ driver.HandBacker    = (*Driver)(nil)
)
