package ui

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/testkit"
)

// The dashboard's event fold (src/fold.ts) against frames recorded from a
// real Claude Code session (testdata/frames): src/fold.test.ts, run by the
// pinned Node 22, which runs TypeScript as is (type stripping), so the fold's
// tests need no test framework, no bundler and no browser.
func TestFold(t *testing.T) {
	t.Parallel()
	testkit.NeedsNode(t)
	dir, _, _ := strings.Cut(testkit.Node22PATH(t), string(os.PathListSeparator))
	cmd := exec.Command(filepath.Join(dir, "node"), "--test", "--test-reporter=dot", "src/fold.test.ts")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test src/fold.test.ts: %v\n%s", err, out)
	}
}
