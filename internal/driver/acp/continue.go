package acp

import (
	"path/filepath"
	"strings"

	"github.com/parleyhq/parley/internal/driver"
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
