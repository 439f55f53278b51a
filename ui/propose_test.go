package ui

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/testkit"
)

// A permission card's "Make a rule…" proposal (src/propose.ts):
// src/propose.test.ts under the pinned Node 22, as TestFold.
func TestProposeRule(t *testing.T) {
	t.Parallel()
	testkit.NeedsNode(t)
	dir, _, _ := strings.Cut(testkit.Node22PATH(t), string(os.PathListSeparator))
	cmd := exec.Command(filepath.Join(dir, "node"), "--test", "--test-reporter=dot", "src/propose.test.ts")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test src/propose.test.ts: %v\n%s", err, out)
	}
}
