package claudeapi

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/testkit/standin"
)

// Request kinds, as the stand-in classified them.
const (
	KindScenario    = "scenario"     // a model turn the scenario answered
	KindTitle       = "title"        // title generation (<session>…</session>)
	KindSide        = "side"         // another side call (no tools, not streamed, …)
	KindCountTokens = "count_tokens" // /v1/messages/count_tokens
	KindOther       = "other"        // GETs and anything else
)

// Request is one recorded HTTP request and how it was answered.
type Request struct {
	Method string
	Path   string
	Kind   string
	Body   []byte
	// Parsed fields of a /v1/messages body.
	Model    string
	Stream   bool
	System   json.RawMessage
	Messages []Message
	Tools    []json.RawMessage
	// Rule is the index of the scenario rule that answered, or -1.
	Rule int
	// Answered are the tool_use ids this request answered as tool results.
	Answered []string
	At       time.Time
}

// Message is one entry of a request's messages array.
type Message struct {
	Role    string         `json:"role"`
	Content []ContentBlock `json:"content"`
}

// ContentBlock is one block of a message (text, tool_use, tool_result, …).
type ContentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	// Content of a tool_result: a string or blocks; see ResultText.
	Content json.RawMessage `json:"content,omitempty"`
}

// ResultText is a tool_result's content as plain text.
func (b ContentBlock) ResultText() string {
	if len(b.Content) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(b.Content, &s) == nil {
		return s
	}
	var blocks []ContentBlock
	if json.Unmarshal(b.Content, &blocks) == nil {
		var sb strings.Builder
		for _, c := range blocks {
			sb.WriteString(c.Text)
		}
		return sb.String()
	}
	return string(b.Content)
}

// UnmarshalJSON accepts content as a string or as blocks.
func (m *Message) UnmarshalJSON(b []byte) error {
	var raw struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	m.Role = raw.Role
	m.Content = nil
	var s string
	if json.Unmarshal(raw.Content, &s) == nil {
		m.Content = []ContentBlock{{Type: "text", Text: s}}
		return nil
	}
	if len(raw.Content) > 0 && string(raw.Content) != "null" {
		if err := json.Unmarshal(raw.Content, &m.Content); err != nil {
			return fmt.Errorf("claudeapi: message content: %w", err)
		}
	}
	return nil
}

// PersonTexts are the message's text blocks, without <system-reminder> blocks.
func (m Message) PersonTexts() []string {
	var out []string
	for _, c := range m.Content {
		if c.Type != "text" {
			continue
		}
		t := strings.TrimSpace(c.Text)
		if t == "" || strings.HasPrefix(t, "<system-reminder>") {
			continue
		}
		out = append(out, c.Text)
	}
	return out
}

// LastUserText is the last person text of the request's last user-role message.
func (r Request) LastUserText() string {
	m, ok := r.lastUser()
	if !ok {
		return ""
	}
	ts := m.PersonTexts()
	if len(ts) == 0 {
		return ""
	}
	return ts[len(ts)-1]
}

// UserTexts are the person texts of every user-role message, oldest first:
// what a resumed session carried of the earlier turns.
func (r Request) UserTexts() []string {
	var out []string
	for _, m := range r.Messages {
		if m.Role == "user" {
			out = append(out, m.PersonTexts()...)
		}
	}
	return out
}

// AssistantTexts are the text blocks of every assistant message, oldest first.
func (r Request) AssistantTexts() []string {
	var out []string
	for _, m := range r.Messages {
		if m.Role != "assistant" {
			continue
		}
		for _, c := range m.Content {
			if c.Type == "text" {
				out = append(out, c.Text)
			}
		}
	}
	return out
}

func (r Request) lastUser() (Message, bool) {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i], true
		}
	}
	return Message{}, false
}

// Server is the stand-in. Create it with Start or NewServer; it is safe for
// concurrent use. Its URL is the base URL for ANTHROPIC_BASE_URL.
type Server struct {
	standin.Server[Request, Scenario]

	// Guarded by Mu, with the scenario.
	toolName map[string]string // tool_use id → tool name, for ids the stand-in made
	answered map[string]bool   // tool_use ids already answered
	nextID   int
}

// TB is the part of testing.TB the stand-in needs.
type TB = standin.TB

// Start starts a stand-in for sc on 127.0.0.1 and closes it when the test ends.
func Start(t TB, sc Scenario) *Server {
	t.Helper()
	s, err := NewServer("127.0.0.1:0", sc)
	if err != nil {
		t.Fatalf("claudeapi: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// StartOn starts a stand-in for sc serving on ln (one opened inside a
// network namespace: netns.Listen) and closes it when the test ends.
func StartOn(t TB, ln net.Listener, sc Scenario) *Server {
	t.Helper()
	s := &Server{toolName: map[string]string{}, answered: map[string]bool{}}
	s.InitOn(ln, sc, ruleCount, http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// NewServer starts a stand-in listening on addr (e.g. "127.0.0.1:0").
func NewServer(addr string, sc Scenario) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("claudeapi: listen: %w", err)
	}
	s := &Server{toolName: map[string]string{}, answered: map[string]bool{}}
	s.InitOn(ln, sc, ruleCount, http.HandlerFunc(s.serve))
	return s, nil
}

func ruleCount(sc Scenario) int { return len(sc.Rules) }

// ScenarioRequests returns the model turns (side requests left out).
func (s *Server) ScenarioRequests() []Request {
	return s.RequestsWhere(func(r Request) bool { return r.Kind == KindScenario })
}

// ToolResult returns the first tool_result the agent sent for toolUseID.
func (s *Server) ToolResult(toolUseID string) (ContentBlock, bool) {
	for _, r := range s.Requests() {
		for _, m := range r.Messages {
			for _, c := range m.Content {
				if c.Type == "tool_result" && c.ToolUseID == toolUseID {
					return c, true
				}
			}
		}
	}
	return ContentBlock{}, false
}

// ToolResultFor returns the first tool_result for a tool use of the named tool
// (or with that id) that the stand-in itself asked for.
func (s *Server) ToolResultFor(nameOrID string) (ContentBlock, bool) {
	s.Mu.Lock()
	var ids []string
	for id, name := range s.toolName {
		if id == nameOrID || name == nameOrID {
			ids = append(ids, id)
		}
	}
	s.Mu.Unlock()
	for _, r := range s.Requests() {
		for _, m := range r.Messages {
			for _, c := range m.Content {
				if c.Type != "tool_result" {
					continue
				}
				for _, id := range ids {
					if c.ToolUseID == id {
						return c, true
					}
				}
			}
		}
	}
	return ContentBlock{}, false
}

// ToolUseIDs returns the ids of the tool uses the stand-in sent for a tool
// name, in the order it sent them (the ids it makes carry a zero-padded
// sequence number; a scenario's own ids sort by name).
func (s *Server) ToolUseIDs(name string) []string {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	var ids []string
	for id, n := range s.toolName {
		if n == name {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

type messagesBody struct {
	Model    string            `json:"model"`
	Stream   bool              `json:"stream"`
	System   json.RawMessage   `json:"system"`
	Messages []Message         `json:"messages"`
	Tools    []json.RawMessage `json:"tools"`
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	rec := Request{Method: r.Method, Path: r.URL.Path, Body: body, Rule: -1, Kind: KindOther, At: time.Now()}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		rec.Kind = KindCountTokens
		s.Record(rec)
		standin.WriteJSON(w, http.StatusOK, map[string]int{"input_tokens": 100})
		return
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
	default:
		s.Record(rec)
		standin.WriteJSON(w, http.StatusOK, map[string]any{})
		return
	}

	var mb messagesBody
	if err := json.Unmarshal(body, &mb); err != nil {
		s.Record(rec)
		standin.WriteJSON(w, http.StatusBadRequest, errorBody("invalid_request_error", "stand-in: "+err.Error()))
		return
	}
	rec.Model, rec.Stream, rec.System, rec.Messages, rec.Tools = mb.Model, mb.Stream, mb.System, mb.Messages, mb.Tools

	var reply Reply
	switch {
	case strings.Contains(rec.LastUserText(), "<session>"):
		rec.Kind = KindTitle
		reply = Reply{Blocks: []Block{{Type: BlockText, Text: `{"title": "Stand-in session"}`}}}
	case len(mb.Tools) == 0:
		rec.Kind = KindSide
		reply = Reply{Blocks: []Block{{Type: BlockText, Text: "stand-in side reply"}}}
	default:
		rec.Kind = KindScenario
		reply = s.pick(&rec)
	}
	reply = s.assignIDs(reply)
	s.Record(rec)
	if reply.Wait > 0 && !standin.Wait(r.Context(), time.Duration(reply.Wait)) {
		return // the client went away
	}
	if e := reply.Error; e != nil && e.Status != 0 {
		standin.WriteJSON(w, e.Status, errorBody(cmp.Or(e.Type, "overloaded_error"), cmp.Or(e.Message, "Overloaded")))
		return
	}
	if !mb.Stream {
		if reply.Hold != nil && !reply.Hold.wait(r, nil) {
			return // the client went away
		}
		standin.WriteJSON(w, http.StatusOK, wholeMessage(mb.Model, reply))
		return
	}
	streamReply(w, r, mb.Model, reply)
}

// pick chooses the reply for a model turn and marks the tool results it answers.
func (s *Server) pick(rec *Request) Reply {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	last, _ := rec.lastUser()
	// New tool results, in order; results answered before are history.
	var fresh []ContentBlock
	for _, c := range last.Content {
		if c.Type == "tool_result" && !s.answered[c.ToolUseID] {
			fresh = append(fresh, c)
		}
	}
	for _, c := range fresh {
		s.answered[c.ToolUseID] = true
		rec.Answered = append(rec.Answered, c.ToolUseID)
	}
	texts := last.PersonTexts()
	// A person's words after the tool results are a new prompt: answer them.
	if len(fresh) > 0 && len(texts) == 0 {
		for _, c := range fresh {
			name := s.toolName[c.ToolUseID]
			for i, rule := range s.Sc.Rules {
				m := rule.Match.ToolResult
				if m != "" && (m == name || m == c.ToolUseID) && s.Uses.Take(i, rule.Times) {
					rec.Rule = i
					return rule.Reply
				}
			}
		}
		return s.fallback(fmt.Sprintf("tool result for %s", s.toolName[fresh[0].ToolUseID]))
	}
	text := ""
	if len(texts) > 0 {
		text = texts[len(texts)-1]
	}
	for i, rule := range s.Sc.Rules {
		m := rule.Match
		if m.ToolResult != "" {
			continue
		}
		ok := false
		switch {
		case m.Exact != "":
			ok = strings.TrimSpace(text) == m.Exact
		case m.Prefix != "":
			ok = strings.HasPrefix(strings.TrimSpace(text), m.Prefix)
		case m.Contains != "":
			ok = strings.Contains(text, m.Contains)
		default:
			ok = true
		}
		if ok && s.Uses.Take(i, rule.Times) {
			rec.Rule = i
			return rule.Reply
		}
	}
	return s.fallback(fmt.Sprintf("%q", text))
}

func (s *Server) fallback(what string) Reply {
	if s.Sc.Default != nil {
		return *s.Sc.Default
	}
	return Text("stand-in: no rule matches "+what, 1, 0)
}

// assignIDs gives each tool use without an id a fresh one and remembers its name.
func (s *Server) assignIDs(r Reply) Reply {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	blocks := make([]Block, len(r.Blocks))
	copy(blocks, r.Blocks)
	for i := range blocks {
		if blocks[i].Type != BlockToolUse {
			continue
		}
		if blocks[i].ID == "" {
			s.nextID++
			blocks[i].ID = fmt.Sprintf("toolu_standin_%04d_%d", s.nextID, time.Now().UnixNano()%1e6)
		}
		s.toolName[blocks[i].ID] = blocks[i].Name
	}
	r.Blocks = blocks
	return r
}

func errorBody(typ, msg string) map[string]any {
	return map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}}
}
