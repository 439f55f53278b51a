package router

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/chat"
)

// maxCurrentBytes caps the file a Write card reads to show its diff; a larger
// one is shown as the tool's input alone.
const maxCurrentBytes = 256 << 10

// writeDiffs is the diff a Write permission card shows when the file exists:
// its current content (read now, through an os.Root on the agent root that
// holds it, so a link cannot lead outside the roots; text only, at most
// maxCurrentBytes) to the new. An existing file whose content cannot be shown
// still says it exists, and why it is not shown: a card must never call a
// replaced file new. Nil for other tools and for a file that is not there.
func writeDiffs(tool chat.PermissionTool, roots []string) []chat.Diff {
	if tool.Name != "Write" {
		return nil
	}
	var in struct {
		FilePath string  `json:"file_path"`
		Content  *string `json:"content"`
	}
	if json.Unmarshal(tool.Input, &in) != nil || in.Content == nil || !filepath.IsAbs(in.FilePath) {
		return nil
	}
	path := filepath.Clean(in.FilePath)
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	d := chat.Diff{Path: in.FilePath, NewText: *in.Content, Exists: true}
	d.OldText, d.Unshown = readConfined(path, roots)
	return []chat.Diff{d}
}

// readConfined reads path if it lies in one of roots, as text; else it says
// why not.
func readConfined(path string, roots []string) (text, whyNot string) {
	for _, r := range roots {
		rel, err := filepath.Rel(r, path)
		if err != nil || !filepath.IsLocal(rel) {
			continue
		}
		root, err := os.OpenRoot(r)
		if err != nil {
			continue
		}
		defer root.Close()
		f, err := root.Open(rel)
		if err != nil {
			return "", "it cannot be read inside the agent's folders"
		}
		defer f.Close()
		st, err := f.Stat()
		switch {
		case err != nil:
			return "", "it cannot be read"
		case !st.Mode().IsRegular():
			return "", "it is not a regular file"
		case st.Size() > maxCurrentBytes:
			return "", fmt.Sprintf("%d KiB, larger than %d KiB", st.Size()>>10, maxCurrentBytes>>10)
		}
		b, err := io.ReadAll(io.LimitReader(f, maxCurrentBytes+1))
		switch {
		case err != nil:
			return "", "it cannot be read"
		case len(b) > maxCurrentBytes:
			return "", fmt.Sprintf("larger than %d KiB", maxCurrentBytes>>10)
		case !utf8.Valid(b):
			return "", "it is not UTF-8 text"
		}
		return string(b), ""
	}
	return "", "it is outside the agent's folders"
}
