// Gemini CLI's saved chat, followed as a transcript. Gemini CLI 0.61.0
// keeps a session at ~/.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl
// and appends to it (it does not rewrite it whole): a header line with the
// session id, then records that add a message, replace one (the same id
// again, e.g. when its tool calls end) or replace them all ({"$set":
// {"messages": …}}), and {"$set": {"lastUpdated": …}} after each. An answer
// is written once it is complete, before the TUI shows the turn over.

package transcript

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver/geminichat"
)

// FollowGemini follows a Gemini CLI chat file as FollowPrompts does a
// Claude Code transcript: each new prompt is a chat.UserMessage (the caller
// tells its own sends from a person's), each answer's words (and thoughts)
// agent text, each tool call a tool call (its end an update once the chat
// has it), each reported once by its id, however often Gemini writes its
// message again. A pane's confirmations are read from its screen (cards).
func FollowGemini(path string, skip int64, emit func(chat.Payload), logger *slog.Logger) (*Follower, error) {
	p := NewGeminiParser()
	p.prompts = true
	return followWith(path, skip, p, false, emit, logger)
}

// FollowGeminiPlaces is FollowGemini that reports ReadTo as FollowPlaces
// does: for an adopted pane, whose place in its chat a restarted parley
// goes on from (the prompts typed and answers given meanwhile shown then).
func FollowGeminiPlaces(path string, skip int64, emit func(chat.Payload), logger *slog.Logger) (*Follower, error) {
	p := NewGeminiParser()
	p.prompts = true
	return followWith(path, skip, p, true, emit, logger)
}

// NewGeminiParser returns a parser of Gemini CLI chat lines.
func NewGeminiParser() *Parser {
	p := NewParser()
	p.gemini, p.said = true, map[string]string{}
	return p
}

// geminiMessage is one message of a chat (Gemini CLI 0.61.0).
type geminiMessage struct {
	ID        string          `json:"id"`
	Timestamp time.Time       `json:"timestamp"`
	Type      string          `json:"type"` // user, gemini, info, error…
	Content   json.RawMessage `json:"content"`
	Thoughts  []struct {
		Subject     string `json:"subject"`
		Description string `json:"description"`
	} `json:"thoughts"`
	ToolCalls []geminichat.Tool `json:"toolCalls"`
}

// geminiLine parses one chat line.
func (p *Parser) geminiLine(line []byte) ([]chat.Payload, error) {
	var r struct {
		SessionID string `json:"sessionId"`
		geminiMessage
		Set *struct {
			Messages *[]geminiMessage `json:"messages"`
		} `json:"$set"`
	}
	if err := json.Unmarshal(line, &r); err != nil {
		return nil, fmt.Errorf("gemini chat: %w", err)
	}
	switch {
	case r.SessionID != "": // the header
		return nil, nil
	case r.Set != nil:
		if r.Set.Messages == nil {
			return nil, nil
		}
		var out []chat.Payload
		for _, m := range *r.Set.Messages {
			out = append(out, p.geminiMessage(&m)...)
		}
		return out, nil
	case r.Type != "":
		return p.geminiMessage(&r.geminiMessage), nil
	}
	return nil, nil
}

// geminiMessage turns a message into updates, remembering it. A message
// written again with more words reports the words added; other changes to
// words already reported are not reported again.
func (p *Parser) geminiMessage(m *geminiMessage) []chat.Payload {
	if m.ID == "" {
		return nil
	}
	var out []chat.Payload
	switch m.Type {
	case "user":
		if text, ok := geminichat.Prompt(m.Content); p.prompts && ok && p.once("prompt", m.ID) {
			out = append(out, chat.UserMessage{MessageID: m.ID, Text: text})
		}
	case "gemini":
		for _, t := range m.Thoughts {
			text := strings.TrimSpace(strings.TrimSpace(t.Subject) + "\n" + strings.TrimSpace(t.Description))
			if text != "" && p.once(m.ID, "thought", text) {
				out = append(out, chat.ThoughtChunk{Text: text})
			}
		}
		text := geminichat.Text(m.Content)
		said := p.said[m.ID]
		if text != "" && strings.HasPrefix(text, said) && len(text) > len(said) {
			p.said[m.ID] = text
			out = append(out, chat.AgentChunk{Text: text[len(said):], MessageID: m.ID})
		}
		for _, tc := range m.ToolCalls {
			if tc.ID == "" {
				continue
			}
			call, end := tc.Event()
			if p.once(m.ID, "tool", tc.ID) {
				out = append(out, call)
			}
			if tc.Ended() && p.once(m.ID, "tool end", tc.ID) {
				out = append(out, end)
			}
		}
	}
	if !p.since.IsZero() && m.Timestamp.Before(p.since) {
		return nil // history: remembered above, not news
	}
	return out
}
