// Package claudecode is Claude Code's message format, as both its stream-json
// output and its transcript files carry it: content blocks, and how a tool use
// becomes a tool call a person reads. The stream and tmux drivers share it, so a
// tool looks the same on either transport.
package claudecode

import (
	"encoding/json"
	"strings"

	"github.com/parleyhq/parley/internal/chat"
)

// Message is an assistant or user message.
type Message struct {
	ID   string `json:"id"`
	Role string `json:"role"`
	// Content is a string (a person's or a local command's text) or blocks.
	Content json.RawMessage `json:"content"`
	// Usage is the model call's tokens (an assistant message's).
	Usage *Usage `json:"usage,omitempty"`
}

// Usage is one model call's tokens: what it read (fresh, from the cache, into
// the cache) and wrote; together, how much of the context the conversation fills.
type Usage struct {
	InputTokens         int64 `json:"input_tokens"`
	CacheCreationTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadTokens     int64 `json:"cache_read_input_tokens"`
	OutputTokens        int64 `json:"output_tokens"`
}

// Context is how many tokens the conversation fills after this call.
func (u Usage) Context() int64 {
	return u.InputTokens + u.CacheCreationTokens + u.CacheReadTokens + u.OutputTokens
}

// Block is one content block: text, thinking, tool_use or tool_result.
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   bool            `json:"is_error"`
	Content   json.RawMessage `json:"content"`
}

// Blocks returns the message's content blocks (none when it is a plain string
// or not blocks at all).
func (m *Message) Blocks() []Block {
	if m == nil || len(m.Content) == 0 || m.Content[0] != '[' {
		return nil
	}
	var bs []Block
	if err := json.Unmarshal(m.Content, &bs); err != nil {
		return nil
	}
	return bs
}

// ResultText is a tool_result's content as text (a string or text blocks).
func (b Block) ResultText() string {
	if len(b.Content) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(b.Content, &s) == nil {
		return s
	}
	var bs []Block
	if json.Unmarshal(b.Content, &bs) == nil {
		var sb strings.Builder
		for _, c := range bs {
			sb.WriteString(c.Text)
		}
		return sb.String()
	}
	return string(b.Content)
}

// ToolCall is a tool_use block as the tool call a person sees.
func ToolCall(b Block) chat.ToolCall {
	tc := chat.ToolCall{
		ToolCallID: b.ID, Title: ToolTitle(b.Name, b.Input, ""), Kind: ToolKind(b.Name),
		Status: "pending", Input: b.Input,
	}
	var in struct {
		FilePath string `json:"file_path"`
	}
	if json.Unmarshal(b.Input, &in) == nil && in.FilePath != "" {
		tc.Locations = []chat.Location{{Path: in.FilePath}}
	}
	return tc
}

// ToolTitle is a one-line description of a tool use for cards and tool lines;
// description, when given, is what the agent said the call is for.
func ToolTitle(name string, input json.RawMessage, description string) string {
	var in map[string]any
	_ = json.Unmarshal(input, &in)
	str := func(k string) string { v, _ := in[k].(string); return v }
	switch name {
	case "Bash":
		if c := str("command"); c != "" {
			return c
		}
	case "Read", "Edit", "Write", "MultiEdit", "NotebookEdit":
		if p := str("file_path"); p != "" {
			return name + " " + p
		}
		if p := str("notebook_path"); p != "" {
			return name + " " + p
		}
	case "Glob", "Grep":
		if p := str("pattern"); p != "" {
			return name + " " + p
		}
	case "WebFetch":
		if u := str("url"); u != "" {
			return "Fetch " + u
		}
	case "WebSearch":
		if q := str("query"); q != "" {
			return "Search " + q
		}
	case "ExitPlanMode":
		return "Leave plan mode and start on the plan"
	}
	if description != "" {
		return description
	}
	if d := str("description"); d != "" {
		return d
	}
	return name
}

// ToolKind maps a Claude Code tool onto ACP's tool kinds.
func ToolKind(name string) string {
	switch name {
	case "Bash", "BashOutput", "KillShell":
		return "execute"
	case "Read", "NotebookRead":
		return "read"
	case "Edit", "MultiEdit", "Write", "NotebookEdit":
		return "edit"
	case "Glob", "Grep", "LS":
		return "search"
	case "WebFetch", "WebSearch":
		return "fetch"
	case "Task", "TodoWrite", "ExitPlanMode", "EnterPlanMode":
		return "think"
	}
	return "other"
}

// AskUserQuestion is Claude Code's tool that asks the person questions; either
// transport shows it as a question card, not a permission.
const AskUserQuestion = "AskUserQuestion"

// Questions reads AskUserQuestion's input (questions with a header, options
// and multiSelect) as a question card's items; none when it holds none. The
// stream driver reads it from the permission request, the tmux driver from
// the PreToolUse hook: one reading, one card, whichever transport.
func Questions(input json.RawMessage) []chat.QuestionItem {
	var in struct {
		Questions []struct {
			Question    string                `json:"question"`
			Header      string                `json:"header"`
			MultiSelect bool                  `json:"multiSelect"`
			Options     []chat.QuestionOption `json:"options"`
		} `json:"questions"`
	}
	if json.Unmarshal(input, &in) != nil {
		return nil
	}
	var items []chat.QuestionItem
	for _, q := range in.Questions {
		items = append(items, chat.QuestionItem{Question: q.Question, Header: q.Header, MultiSelect: q.MultiSelect, Options: q.Options})
	}
	return items
}

// SuggestionLabel says what Claude Code's permission_suggestions do when sent
// back with an allow (the "Allow always" answer): the rules they add, the mode
// they set, the folders they allow, and where. "" when there are none: then
// "always" would do no more than "once".
func SuggestionLabel(raw json.RawMessage) string {
	var sugg []struct {
		Type  string `json:"type"`
		Rules []struct {
			ToolName    string `json:"toolName"`
			RuleContent string `json:"ruleContent"`
		} `json:"rules"`
		Behavior    string   `json:"behavior"`
		Mode        string   `json:"mode"`
		Directories []string `json:"directories"`
		Destination string   `json:"destination"`
	}
	if json.Unmarshal(raw, &sugg) != nil {
		return ""
	}
	var parts []string
	for _, s := range sugg {
		where := map[string]string{
			"session":         " for this session",
			"localSettings":   " in this project (.claude/settings.local.json)",
			"projectSettings": " in this project (.claude/settings.json)",
			"userSettings":    " in all your projects (~/.claude/settings.json)",
		}[s.Destination]
		switch s.Type {
		case "addRules", "replaceRules":
			var rules []string
			for _, r := range s.Rules {
				if r.RuleContent != "" {
					rules = append(rules, r.ToolName+"("+r.RuleContent+")")
				} else {
					rules = append(rules, r.ToolName)
				}
			}
			verb := "allow"
			if s.Behavior != "" && s.Behavior != "allow" {
				verb = s.Behavior
			}
			if len(rules) > 0 {
				parts = append(parts, verb+" "+strings.Join(rules, ", ")+where)
			}
		case "setMode":
			if s.Mode != "" {
				parts = append(parts, "switch to "+ModeName(s.Mode)+" mode"+where)
			}
		case "addDirectories":
			if len(s.Directories) > 0 {
				parts = append(parts, "allow access to "+strings.Join(s.Directories, ", ")+where)
			}
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "Allow, and " + strings.Join(parts, "; ")
}

// ModeName is a permission mode's name as Claude Code shows it.
func ModeName(mode string) string {
	switch mode {
	case "default":
		return "Default"
	case "acceptEdits":
		return "Accept edits"
	case "plan":
		return "Plan"
	case "bypassPermissions":
		return "Bypass permissions"
	}
	return mode
}
