package stream

import (
	"encoding/json"

	"github.com/parleyhq/parley/internal/chat"
)

// initialized reads initialize's answer: the slash commands and the models.
func (s *session) initialized(r controlResponse) {
	var resp struct {
		Commands []struct {
			Name         string `json:"name"`
			Description  string `json:"description"`
			ArgumentHint string `json:"argumentHint"`
		} `json:"commands"`
		Models []struct {
			Value       string `json:"value"`
			DisplayName string `json:"displayName"`
			Description string `json:"description"`
		} `json:"models"`
	}
	if err := json.Unmarshal(r.Response, &resp); err != nil {
		s.log.Debug("claude: initialize answer", "err", err)
		return
	}
	s.mu.Lock()
	s.models = s.models[:0]
	for _, m := range resp.Models {
		s.models = append(s.models, chat.ModeOption{ID: m.Value, Name: m.DisplayName, Description: m.Description})
	}
	s.mu.Unlock()
	if len(resp.Commands) > 0 {
		cs := chat.Commands{Commands: make([]chat.Command, 0, len(resp.Commands))}
		for _, c := range resp.Commands {
			cs.Commands = append(cs.Commands, chat.Command{Name: c.Name, Description: c.Description, Hint: c.ArgumentHint})
		}
		s.sink.Event(cs)
	}
}
