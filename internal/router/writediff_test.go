package router

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
)

func TestWriteDiffsReadTheCurrentFileInsideTheRoots(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	write := func(path, content string) {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "a.txt"), "old\n")
	write(filepath.Join(outside, "secret"), "secret\n")
	write(filepath.Join(root, "big.txt"), strings.Repeat("x", maxCurrentBytes+1))
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	tool := func(name, path string) chat.PermissionTool {
		in, _ := json.Marshal(map[string]string{"file_path": path, "content": "new\n"})
		return chat.PermissionTool{Name: name, Input: in}
	}
	if got := writeDiffs(tool("Write", filepath.Join(root, "a.txt")), []string{root}); len(got) != 1 || got[0].OldText != "old\n" || got[0].NewText != "new\n" {
		t.Errorf("an existing file: got %+v, want its content to the new", got)
	}
	for what, tl := range map[string]chat.PermissionTool{
		"a new file":                 tool("Write", filepath.Join(root, "new.txt")),
		"a file outside the roots":   tool("Write", filepath.Join(outside, "secret")),
		"a link out of the roots":    tool("Write", filepath.Join(root, "link")),
		"a path climbing out":        tool("Write", root+"/../"+filepath.Base(outside)+"/secret"),
		"a file over the size limit": tool("Write", filepath.Join(root, "big.txt")),
		"another tool":               tool("Edit", filepath.Join(root, "a.txt")),
		"a relative path":            tool("Write", "a.txt"),
	} {
		if got := writeDiffs(tl, []string{root}); got != nil {
			t.Errorf("%s: got %+v, want no diff read", what, got)
		}
	}
}
