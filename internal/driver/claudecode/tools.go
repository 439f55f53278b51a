package claudecode

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/parleyhq/parley/internal/driver"
)

// ToolsFile is the name of the --mcp-config file in a session's folder.
const ToolsFile = "parley-mcp.json"

// ToolArgs gives Claude Code parley's MCP server (driver.Spec.Tools): the
// server, from a file written 0600 into dir (its credential is never on a
// command line, which other users may read), and its tools allowed without
// asking (mcp__parley__*: they only reach the person, who is asked anyway).
// The person's own MCP servers stay (no --strict-mcp-config). Both flags
// take several values: put them before other flags, never last before a
// prompt.
func ToolArgs(dir string, srv driver.MCPServer) ([]string, error) {
	b, err := srv.ClaudeConfig()
	if err != nil {
		return nil, fmt.Errorf("claude: mcp config: %w", err)
	}
	path := filepath.Join(dir, ToolsFile)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return nil, fmt.Errorf("claude: mcp config: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil { // a file left by an earlier session keeps its mode
		return nil, fmt.Errorf("claude: mcp config: %w", err)
	}
	return []string{"--mcp-config", path, "--allowedTools", "mcp__" + srv.Name}, nil
}
