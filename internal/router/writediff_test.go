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
	t.Parallel()
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
	write(filepath.Join(root, "empty.txt"), "")
	if got := writeDiffs(tool("Write", filepath.Join(root, "empty.txt")), []string{root}); len(got) != 1 || !got[0].Exists || got[0].OldText != "" || got[0].Unshown != "" {
		t.Errorf("an existing empty file: got %+v, want it said to exist, empty", got)
	}
	for what, tl := range map[string]chat.PermissionTool{
		"a new file":      tool("Write", filepath.Join(root, "new.txt")),
		"another tool":    tool("Edit", filepath.Join(root, "a.txt")),
		"a relative path": tool("Write", "a.txt"),
	} {
		if got := writeDiffs(tl, []string{root}); got != nil {
			t.Errorf("%s: got %+v, want no diff read", what, got)
		}
	}
	// A file that is there but not shown is never called new: the card says
	// it exists and why its content is not shown, and shows none of it.
	for what, tl := range map[string]chat.PermissionTool{
		"a file outside the roots":   tool("Write", filepath.Join(outside, "secret")),
		"a link out of the roots":    tool("Write", filepath.Join(root, "link")),
		"a path climbing out":        tool("Write", root+"/../"+filepath.Base(outside)+"/secret"),
		"a file over the size limit": tool("Write", filepath.Join(root, "big.txt")),
	} {
		got := writeDiffs(tl, []string{root})
		if len(got) != 1 || !got[0].Exists || got[0].OldText != "" || got[0].Unshown == "" {
			t.Errorf("%s: got %+v, want it said to exist, its content not shown, with the reason", what, got)
		}
	}
}
