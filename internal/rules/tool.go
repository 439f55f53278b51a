package rules

import (
	"encoding/json"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// FromTool reads what a permission card's tool call would do: the shell
// command line it runs (Claude Code's Bash `command`, an ACP execute's
// `command` as a string or as argv) and the files it touches (`file_path`,
// `path`, `notebook_path`, and each edit's in a MultiEdit-like list).
func FromTool(input json.RawMessage) (command string, paths []string) {
	var in struct {
		Command      json.RawMessage `json:"command"`
		FilePath     string          `json:"file_path"`
		FilePathACP  string          `json:"filePath"`
		Path         string          `json:"path"`
		NotebookPath string          `json:"notebook_path"`
	}
	if len(input) == 0 || json.Unmarshal(input, &in) != nil {
		return "", nil
	}
	var line string
	var argv []string
	switch {
	case json.Unmarshal(in.Command, &line) == nil:
		command = line
	case json.Unmarshal(in.Command, &argv) == nil && len(argv) > 0:
		// argv runs as it is: quote each word so the parser reads it back
		// as the same words.
		q := make([]string, len(argv))
		for i, a := range argv {
			w, err := syntax.Quote(a, syntax.LangBash)
			if err != nil {
				return "\x00unquotable", nil // unreadable: asks
			}
			q[i] = w
		}
		command = strings.Join(q, " ")
	}
	for _, p := range []string{in.FilePath, in.FilePathACP, in.Path, in.NotebookPath} {
		if p != "" {
			paths = append(paths, p)
		}
	}
	return command, paths
}
