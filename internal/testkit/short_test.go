package testkit

import (
	"bufio"
	"go/build/constraint"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The end-to-end suites build only with the e2e tag, so the fast tier
// (`go test -short ./...`) does not compile and link a whole daemon for each of
// them; CI must then pass the tag to every go command, or those tests would
// silently not run there.

// TestEveryEndToEndFileNeedsTheTag: a file in internal/e2e without the tag
// would put its package back into the fast tier's build.
func TestEveryEndToEndFileNeedsTheTag(t *testing.T) {
	t.Parallel()
	files := 0
	err := filepath.WalkDir("../e2e", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		files++
		expr, err := buildConstraint(path)
		if err != nil {
			return err
		}
		if expr == nil {
			t.Errorf("%s has no //go:build line: start it with //go:build e2e", path)
			return nil
		}
		// Built without e2e whatever else is set: only the e2e tag brings it in.
		if expr.Eval(func(tag string) bool { return tag != "e2e" }) {
			t.Errorf("%s builds without the e2e tag (//go:build %s)", path, expr)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatal("no Go files found under internal/e2e")
	}
}

// buildConstraint is the file's //go:build expression, or nil.
func buildConstraint(path string) (constraint.Expr, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "package ") {
			break
		}
		if constraint.IsGoBuild(line) {
			return constraint.Parse(line)
		}
	}
	return nil, sc.Err()
}

// TestCIPassesTheEndToEndTag: make test (scripts/test.sh, what CI runs) vets,
// checks and tests with the tag.
func TestCIPassesTheEndToEndTag(t *testing.T) {
	t.Parallel()
	script, err := os.ReadFile("../../scripts/test.sh")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"go vet ": false, "cmd/staticcheck@": false, "go test ": false}
	for line := range strings.Lines(string(script)) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, "log ") {
			continue
		}
		for cmd := range want {
			if strings.Contains(line, cmd) {
				want[cmd] = true
				if !strings.Contains(line, "-tags e2e") {
					t.Errorf("scripts/test.sh runs %q without -tags e2e: %s", strings.TrimSpace(cmd), line)
				}
			}
		}
	}
	for cmd, seen := range want {
		if !seen {
			t.Errorf("scripts/test.sh no longer runs %s", strings.TrimSpace(cmd))
		}
	}
}
