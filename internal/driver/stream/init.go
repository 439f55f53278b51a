package stream

import (
	"encoding/json"
	"strings"

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
	s.modeEv.Lock()
	s.mu.Lock()
	s.models = s.models[:0]
	for _, m := range resp.Models {
		s.models = append(s.models, chat.ModeOption{ID: m.Value, Name: m.DisplayName, Description: m.Description})
	}
	// A model reported before the list came is shown by its list entry now.
	was := s.model
	s.model = modelValue(s.model, s.models)
	changed := s.model != was
	ev := s.modeEventLocked()
	s.mu.Unlock()
	if changed {
		s.sink.Event(ev)
	}
	s.modeEv.Unlock()
	if len(resp.Commands) > 0 {
		cs := chat.Commands{Commands: make([]chat.Command, 0, len(resp.Commands))}
		for _, c := range resp.Commands {
			cs.Commands = append(cs.Commands, chat.Command{Name: c.Name, Description: c.Description, Hint: c.ArgumentHint})
		}
		s.sink.Event(cs)
	}
}

// modelValue is the entry of Claude Code's model list that a model id it
// reports stands for, so every surface shows the one name of the list: the
// session's init names the full id ("claude-opus-4-8[1m]"), the list aliases
// ("opus[1m]", named "Opus", described "Opus 4.8 with 1M context"). The
// family, the 1M-context suffix and the version (the entry's description
// names it) must all match: an alias moves to newer models, and a person who
// chose claude-sonnet-4-5 must not see "Sonnet" when Sonnet means Sonnet 5.
// A model the list lacks keeps its id.
func modelValue(model string, values []chat.ModeOption) string {
	for _, v := range values {
		if v.ID == model {
			return model
		}
	}
	full, long := strings.CutSuffix(strings.ToLower(model), "[1m]")
	family, version, ok := modelVersion(full)
	if !ok {
		return model
	}
	for _, v := range values {
		base, vlong := strings.CutSuffix(strings.ToLower(v.ID), "[1m]")
		if base == family && vlong == long && namesVersion(strings.ToLower(v.Description), family+" "+version) {
			return v.ID
		}
	}
	return model
}

// modelVersion reads "claude-<family>-<major>[-<minor>][-<date>]".
func modelVersion(id string) (family, version string, ok bool) {
	parts := strings.Split(id, "-")
	if len(parts) < 3 || parts[0] != "claude" || !isNumber(parts[2], 2) {
		return "", "", false
	}
	family, version = parts[1], parts[2]
	if len(parts) > 3 && isNumber(parts[3], 2) {
		version += "." + parts[3]
	}
	return family, version, true
}

func isNumber(s string, maxLen int) bool {
	if s == "" || len(s) > maxLen {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// namesVersion reports whether desc names "<family> <version>" as a whole
// (not "opus 4.8" in "opus 4.85").
func namesVersion(desc, what string) bool {
	for i := strings.Index(desc, what); i >= 0; {
		end := i + len(what)
		if end == len(desc) || !(desc[end] >= '0' && desc[end] <= '9' || desc[end] == '.' && end+1 < len(desc) && desc[end+1] >= '0' && desc[end+1] <= '9') {
			return true
		}
		j := strings.Index(desc[end:], what)
		if j < 0 {
			return false
		}
		i = end + j
	}
	return false
}

// contextWindow is the context window result l reports for the model in
// force. modelUsage is keyed by full id ("claude-opus-4-8[1m]") while the
// model shown is its list entry ("opus[1m]"): a key stands for the model when
// it maps to that entry. A turn that also used another model (a title made by
// Haiku) reports both; only one entry, whatever its key, is the turn's model.
func contextWindow(l line, model string, list []chat.ModeOption) int64 {
	if mu, ok := l.ModelUsage[model]; ok {
		return mu.ContextWindow
	}
	for id, mu := range l.ModelUsage {
		if modelValue(id, list) == model {
			return mu.ContextWindow
		}
	}
	if len(l.ModelUsage) == 1 {
		for _, mu := range l.ModelUsage {
			return mu.ContextWindow
		}
	}
	return 0
}
