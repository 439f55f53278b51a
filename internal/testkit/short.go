package testkit

import "testing"

// The fast tier: `go test -short ./...` (make unit) runs every package's own
// tests and skips only those that start a real agent program, a real tmux
// server or a real browser, each of which costs seconds per test. `make test`
// (scripts/test.sh, CI) never passes -short: there nothing is skipped.
//
// The rule is written here once; a test states what it needs at its top (or
// its rig does) and the reason printed is the same everywhere.

// NeedsRealAgent skips t under -short: it runs a real agent program (Claude
// Code, Gemini CLI, codex-acp) against a scripted model stand-in.
func NeedsRealAgent(t testing.TB) {
	t.Helper()
	skipShort(t, "runs a real agent program")
}

// NeedsTmux skips t under -short: it drives a real tmux server.
func NeedsTmux(t testing.TB) {
	t.Helper()
	skipShort(t, "drives a real tmux server")
}

// NeedsBrowser skips t under -short: it drives a real Chromium.
func NeedsBrowser(t testing.TB) {
	t.Helper()
	skipShort(t, "drives a real Chromium")
}

func skipShort(t testing.TB, why string) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: " + why + " (make test runs it)")
	}
}

// NeedsNode skips t under -short: it runs a Node program against packages
// scripts/test.sh installs into .cache/npm.
func NeedsNode(t testing.TB) {
	t.Helper()
	skipShort(t, "runs a Node program from .cache/npm")
}
