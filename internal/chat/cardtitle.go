package chat

import "encoding/json"

// Title is a card's one-line summary: the tool's title (or name), or the first
// question. The thread list and push notifications show it; it never holds
// the tool's input.
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
