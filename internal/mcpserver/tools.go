package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parleyhq/parley/internal/chat"
)

// AskInput is ask_person's arguments.
type AskInput struct {
	Question string   `json:"question" jsonschema:"the question for the person, in words they can answer without more context"`
	Options  []string `json:"options,omitempty" jsonschema:"answers to offer (the person may still write their own)"`
	Multi    bool     `json:"multi,omitempty" jsonschema:"the person may pick several options"`
}

// NotifyInput is notify_person's arguments.
type NotifyInput struct {
	Text  string `json:"text" jsonschema:"what to tell the person"`
	Level string `json:"level,omitempty" jsonschema:"info (default), done (a piece of work is finished) or error"`
}

// newMCP is the MCP server of one agent session: its tools act on thread
// alone.
func (s *Server) newMCP(thread chat.ThreadID) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: Name, Title: "parley"}, nil)
	mcp.AddTool(srv, &mcp.Tool{
		Name: "ask_person",
		Description: "Ask the person you work for a question and wait for the answer. It reaches them wherever they are " +
			"(browser, phone, terminal, chat app). Use it when you need a decision only they can make.",
	}, func(ctx context.Context, req *mcp.CallToolRequest, in AskInput) (*mcp.CallToolResult, any, error) {
		q, err := askItem(in)
		if err != nil {
			return nil, nil, err
		}
		ctx, cancel := s.callContext(ctx, req)
		defer cancel()
		defer s.keepAlive(ctx, req)()
		words, err := s.person.Ask(ctx, thread, q)
		if err != nil {
			return nil, nil, fmt.Errorf("the person did not answer: %w", err)
		}
		return text(strings.Join(words, "\n")), nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{
		Name: "notify_person",
		Description: "Tell the person something without waiting for an answer (a finished task, a problem). " +
			"It is kept in the conversation and pushed to their devices.",
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in NotifyInput) (*mcp.CallToolResult, any, error) {
		n, err := Notice(in.Text, in.Level, chat.FromAgent)
		if err != nil {
			return nil, nil, err
		}
		if err := s.person.Notify(ctx, thread, n); err != nil {
			return nil, nil, fmt.Errorf("the notice was not kept: %w", err)
		}
		return text("The person was notified."), nil, nil
	})
	return srv
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// askItem checks ask_person's arguments and makes the card's question.
func askItem(in AskInput) (chat.QuestionItem, error) {
	q := strings.TrimSpace(in.Question)
	switch {
	case q == "":
		return chat.QuestionItem{}, fmt.Errorf("question is empty")
	case utf8.RuneCountInString(q) > maxText:
		return chat.QuestionItem{}, fmt.Errorf("question is longer than %d characters", maxText)
	case len(in.Options) > maxOptions:
		return chat.QuestionItem{}, fmt.Errorf("more than %d options", maxOptions)
	}
	item := chat.QuestionItem{Question: q, MultiSelect: in.Multi, Options: []chat.QuestionOption{}}
	seen := map[string]bool{}
	for _, o := range in.Options {
		o = strings.TrimSpace(o)
		switch {
		case o == "":
			return chat.QuestionItem{}, fmt.Errorf("an option is empty")
		case utf8.RuneCountInString(o) > maxOptionLn:
			return chat.QuestionItem{}, fmt.Errorf("option %.40q… is longer than %d characters", o, maxOptionLn)
		case seen[o]:
			return chat.QuestionItem{}, fmt.Errorf("option %q is offered twice", o)
		}
		seen[o] = true
		item.Options = append(item.Options, chat.QuestionOption{Label: o})
	}
	return item, nil
}

// Notice checks a notice's text and level ("" is info) and makes it, from
// the agent's tool or from parley notify (the REST endpoint).
func Notice(text, level, from string) (chat.Notice, error) {
	text = strings.TrimSpace(text)
	if level == "" {
		level = chat.NoticeInfo
	}
	switch {
	case text == "":
		return chat.Notice{}, fmt.Errorf("text is empty")
	case utf8.RuneCountInString(text) > maxText:
		return chat.Notice{}, fmt.Errorf("text is longer than %d characters", maxText)
	case !chat.ValidNoticeLevel(level):
		return chat.Notice{}, fmt.Errorf("level %q is not info, done or error", level)
	}
	return chat.Notice{Text: text, Level: level, From: from}, nil
}
