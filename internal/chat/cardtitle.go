package chat

import "encoding/json"

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
