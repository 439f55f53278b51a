package acp

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/sessions"
)

// ResumeCommand implements driver.HandBacker for the ACP agents whose own
// command line resumes a session (docs/agents.md): Gemini CLI's
// `gemini --resume ID` and Codex's `codex resume ID`, from the session's
// directory; "" for the others.
func (d *Driver) ResumeCommand(spec driver.Spec) string {
	var words []string
	switch strings.TrimSuffix(filepath.Base(spec.Command), ".js") {
	case "gemini":
		words = []string{"gemini", "--resume", spec.ResumeID}
	case "codex-acp", "codex":
		words = []string{"codex", "resume", spec.ResumeID}
	default:
		return ""
	}
	return driver.ShellLine("cd", spec.Cwd) + " && " + driver.ShellLine(words...)
}

var _ driver.HandBacker = (*Driver)(nil)

// RunningNow implements driver.RunChecker for Codex, which writes no record
// of its running sessions but keeps a session's rollout open while a process
// (codex, codex-acp) runs it: that process is found by its open files
// (package sessions). Other ACP agents: 0, nothing is known.
func (d *Driver) RunningNow(ctx context.Context, spec driver.Spec) (int, error) {
	if !isCodex(spec) || spec.ResumeID == "" {
		return 0, nil
	}
	live, err := sessions.Codex{Dir: codexHome(spec)}.Running(ctx)
	if err != nil {
		return 0, err
	}
	return live[spec.ResumeID].PID, nil
}

var _ driver.RunChecker = (*Driver)(nil)
