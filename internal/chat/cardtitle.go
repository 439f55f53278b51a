package chat

import (
	"cmp"
	"encoding/json"
	"path/filepath"
)

// Title is a card's one-line summary: the tool's title (or name), or the first
// question. The dashboard's thread list shows it. An agent's title may hold
// the tool's input (Claude Code's Bash title is the command), so pushes,
// which leave the machine, don't use it for permission cards.
func (c Card) Title() string {
	var req struct {
		Tool struct {
			Name  string `json:"name"`
			Title string `json:"title"`
		} `json:"tool"`
		Questions []struct {
			Question string `json:"question"`
		} `json:"questions"`
	}
	if json.Unmarshal(c.Request, &req) != nil {
		return ""
	}
	switch {
	case req.Tool.Title != "":
		return req.Tool.Title
	case req.Tool.Name != "":
		return req.Tool.Name
	case len(req.Questions) > 0:
		return req.Questions[0].Question
	}
	return ""
}

// Asks says in a line what a card asks, for a notification that leaves the
// machine (a push, another machine's directory): "asks for permission: Bash"
// or "asks a question: …". Never a permission's input or its agent's title
// (a command, a file's content, which may hold secrets): the tool's name
// and, for a file tool, the file's base name.
func (c Card) Asks() string {
	body, what := "asks a question", c.Title()
	if c.Kind == CardPermission {
		body, what = "asks for permission", toolName(c.Request)
	}
	if what != "" {
		body += ": " + what
	}
	return body
}

// toolName is a permission request's tool name and, for a file tool, the
// file's base name.
func toolName(request json.RawMessage) string {
	var req struct {
		Tool struct {
			Name  string `json:"name"`
			Input struct {
				FilePath     string `json:"file_path"`
				NotebookPath string `json:"notebook_path"`
			} `json:"input"`
		} `json:"tool"`
	}
	if json.Unmarshal(request, &req) != nil {
		// An input of another shape (a string, a list) still leaves the name.
		var named struct {
			Tool struct {
				Name string `json:"name"`
			} `json:"tool"`
		}
		json.Unmarshal(request, &named)
		return named.Tool.Name
	}
	name := req.Tool.Name
	if f := cmp.Or(req.Tool.Input.FilePath, req.Tool.Input.NotebookPath); f != "" && name != "" {
		name += " " + filepath.Base(f)
	}
	return name
}
