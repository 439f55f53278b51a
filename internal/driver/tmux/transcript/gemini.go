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
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/chat"
)

// FollowGemini follows a Gemini CLI chat file as FollowPrompts does a
// Claude Code transcript: each new prompt is a chat.UserMessage (the caller
// tells its own sends from a person's), each answer's words (and thoughts)
// agent text, each message reported once by its id, however often Gemini
// writes it again. Tool calls are not reported: an adopted Gemini pane's are
// read from its screen (its confirmations are cards).
func FollowGemini(path string, skip int64, emit func(chat.Payload), logger *slog.Logger) (*Follower, error) {
	p := NewGeminiParser()
	p.prompts = true
	return followWith(path, skip, p, false, emit, logger)
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
		if text := geminiText(m.Content); p.prompts && text != "" && !strings.HasPrefix(text, "<session_context>") && p.once("prompt", m.ID) {
			out = append(out, chat.UserMessage{MessageID: m.ID, Text: text})
		}
	case "gemini":
		for _, t := range m.Thoughts {
			text := strings.TrimSpace(strings.TrimSpace(t.Subject) + "\n" + strings.TrimSpace(t.Description))
			if text != "" && p.once(m.ID, "thought", text) {
				out = append(out, chat.ThoughtChunk{Text: text})
			}
		}
		text := geminiText(m.Content)
		said := p.said[m.ID]
		if text != "" && strings.HasPrefix(text, said) && len(text) > len(said) {
			p.said[m.ID] = text
			out = append(out, chat.AgentChunk{Text: text[len(said):], MessageID: m.ID})
		}
	}
	if !p.since.IsZero() && m.Timestamp.Before(p.since) {
		return nil // history: remembered above, not news
	}
	return out
}

// geminiText is a message's content as text: a string, or its parts' texts.
func geminiText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return strings.TrimSpace(s)
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var out []string
	for _, p := range parts {
		if t := strings.TrimSpace(p.Text); t != "" {
			out = append(out, t)
		}
	}
	return strings.Join(out, "\n\n")
}

// GeminiChat is the chat file of Gemini CLI session id under dir (~/.gemini,
// or $GEMINI_CLI_HOME/.gemini). A session resumed in a later minute than it
// began has a second file with its short id holding only a header and
// Gemini's context; its messages go on in the first: the largest file whose
// header names the session is its chat.
func GeminiChat(dir, id string) (string, error) {
	if len(id) < 8 || strings.ContainsAny(id, `/\*?[`) {
		return "", fmt.Errorf("gemini chat: %q is not a Gemini CLI session id", id)
	}
	files, err := filepath.Glob(filepath.Join(dir, "tmp", "*", "chats", "session-*-"+id[:8]+".jsonl"))
	if err != nil {
		return "", err
	}
	best, size := "", int64(-1)
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil || fi.Size() <= size || geminiSessionOf(f) != id {
			continue
		}
		best, size = f, fi.Size()
	}
	if best == "" {
		return "", fmt.Errorf("gemini chat: no chat of session %s in %s", id, dir)
	}
	return best, nil
}

// geminiSessionOf is the session id a chat file's header line names.
func geminiSessionOf(path string) string {
	fh, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer fh.Close()
	b := make([]byte, 4096) // a header is a few hundred bytes
	n, _ := fh.Read(b)
	line, _, _ := strings.Cut(string(b[:n]), "\n")
	var h struct {
		SessionID string `json:"sessionId"`
		Kind      string `json:"kind"`
	}
	if json.Unmarshal([]byte(line), &h) != nil || h.Kind == "subagent" {
		return ""
	}
	return h.SessionID
}
