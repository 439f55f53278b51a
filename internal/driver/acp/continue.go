package acp

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/sessions/live"
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

// RunningNow implements driver.RunChecker for Codex and Gemini CLI, which
// write no record of their running sessions. Codex keeps a session's rollout
// open while a process (codex, codex-acp) runs it: that process is found by
// its open files. Gemini CLI's is told from its processes (a Gemini over
// ACP, parley's own, is none of them). Package sessions/live says both. Other ACP agents: 0, nothing is known.
func (d *Driver) RunningNow(ctx context.Context, spec driver.Spec) (int, error) {
	switch {
	case spec.ResumeID == "":
		return 0, nil
	case isGemini(spec):
		return live.Gemini(ctx, geminiHome(spec))[spec.ResumeID], nil
	case isCodex(spec):
		return live.Codex(ctx, codexHome(spec))[spec.ResumeID], nil
	}
	return 0, nil
}

var _ driver.RunChecker = (*Driver)(nil)

// PaneTUI implements driver.PaneAdopter: the tmux driver reads Gemini CLI's
// TUI (package pane), so a Gemini running in a tmux pane is adopted there.
func (d *Driver) PaneTUI(spec driver.Spec) string {
	if isGemini(spec) {
		return "gemini"
	}
	return ""
}

var _ driver.PaneAdopter = (*Driver)(nil)
