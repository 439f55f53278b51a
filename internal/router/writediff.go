package router

import (
	"encoding/json"
	"io"
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
// maxCurrentBytes) to the new. Nil for other tools, a new file, or one that
// cannot be read: the card then shows the input as it is.
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
	old, ok := readConfined(filepath.Clean(in.FilePath), roots)
	if !ok {
		return nil
	}
	return []chat.Diff{{Path: in.FilePath, OldText: old, NewText: *in.Content}}
}

// readConfined reads path if it lies in one of roots, as text.
func readConfined(path string, roots []string) (string, bool) {
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
			return "", false
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil || !st.Mode().IsRegular() || st.Size() > maxCurrentBytes {
			return "", false
		}
		b, err := io.ReadAll(io.LimitReader(f, maxCurrentBytes+1))
		if err != nil || len(b) > maxCurrentBytes || !utf8.Valid(b) {
			return "", false
		}
		return string(b), true
	}
	return "", false
}
