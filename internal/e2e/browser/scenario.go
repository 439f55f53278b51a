//go:build e2e

// Package browser holds the dashboard's browser tests: a real `parley serve`, the
// real Claude Code in stream mode against the scripted model API, and headless
// Chromium driven with chromedp. scenario.go is the script they share.
package browser

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

// Prompts the scenario answers, and what the answers hold.
const (
	PromptMarkdown  = "show me markdown"
	PromptBash      = "run the tool"
	PromptAsk       = "ask me"
	PromptAskMany   = "ask me many"
	PromptSlow      = "slow answer"
	PromptDraft     = "draw it slowly"
	PromptXSS       = "show me html"
	PromptEcho      = "echo"
	PromptWrite     = "write the notes"
	PromptRewrite   = "rewrite the notes"
	PromptEdit      = "edit the greeting"
	GreetFile       = "greet.go"
	WrittenFile     = "notes.txt"
	MarkdownHeading = "Fibonacci in Go"
	ToolFollowUp    = "The file is made."
	QuestionColor   = "Which color do you prefer?"
	QuestionFruit   = "Which fruits do you like?"
	QuestionThanks  = "Thanks for answering."
	XSSMarker       = "window.__pwned"
	// MovedAnswer answers a prompt that carries a moved thread's earlier
	// messages (router.moveContext's preface).
	MovedAnswer      = "I was given the earlier messages."
	markdownAnswerGo = "func fib(n int) int {\n\tif n < 2 {\n\t\treturn n\n\t}\n\treturn fib(n-1) + fib(n-2)\n}"
)

// DraftAnswer is drawn by Claude Code's terminal UI line by line, 6 s long.
const DraftAnswer = "The first line of the drawn answer.\n\nA second line, drawn a moment later.\n\nA third line.\n\nThe last line, written whole at the end."

// Scenario is the scripted model for every browser test. Claude Code 2.1.197
// rejects an AskUserQuestion option without a description (InputValidationError).
// work is the thread's working directory, where the Write tool makes its file.
func Scenario(work string) claudeapi.Scenario {
	md := "## " + MarkdownHeading + "\n\nHere is **bold** and `inline code`:\n\n```go\n" + markdownAnswerGo + "\n```\n\n- one\n- two\n"
	xss := "Raw HTML follows: <script>" + XSSMarker + "=1</script> and <img src=x onerror=\"" + XSSMarker + "=2\"> end.\n\n" +
		"<div><script>" + XSSMarker + "=3</script></div>\n"
	return claudeapi.Scenario{Name: "dashboard", Rules: []claudeapi.Rule{
		{Match: claudeapi.Match{Contains: "moved to you from the agent"}, Reply: claudeapi.Text(MovedAnswer, 1, 0)},
		{Match: claudeapi.Match{Exact: PromptMarkdown}, Reply: claudeapi.Reply{Blocks: []claudeapi.Block{
			{Type: claudeapi.BlockThinking, Text: "The person wants formatted text."},
			{Type: claudeapi.BlockText, Text: md, Chunks: 6, Delay: claudeapi.Duration(20 * time.Millisecond)},
		}}},
		{Match: claudeapi.Match{Exact: PromptBash}, Reply: claudeapi.Bash("touch made-by-bash", "Make a file")},
		{Match: claudeapi.Match{ToolResult: "Bash"}, Reply: claudeapi.Text(ToolFollowUp, 1, 0)},
		{Match: claudeapi.Match{Prefix: PromptAskMany}, Reply: claudeapi.ToolUse("AskUserQuestion", map[string]any{
			"questions": []map[string]any{
				{"question": QuestionColor, "header": "Color", "multiSelect": false,
					"options": []map[string]string{{"label": "Blue", "description": "cool"}, {"label": "Red", "description": "warm"}}},
				{"question": QuestionFruit, "header": "Fruit", "multiSelect": true,
					"options": []map[string]string{{"label": "Apple", "description": "crisp"}, {"label": "Pear", "description": "soft"}, {"label": "Plum", "description": "sweet"}}},
			},
		})},
		{Match: claudeapi.Match{Prefix: PromptAsk}, Reply: claudeapi.ToolUse("AskUserQuestion", map[string]any{
			"questions": []map[string]any{
				{"question": QuestionColor, "header": "Color", "multiSelect": false,
					"options": []map[string]string{{"label": "Blue", "description": "cool"}, {"label": "Red", "description": "warm"}}},
			},
		})},
		{Match: claudeapi.Match{ToolResult: "AskUserQuestion"}, Reply: claudeapi.Text(QuestionThanks, 1, 0)},
		{Match: claudeapi.Match{Exact: PromptDraft}, Reply: claudeapi.Text(DraftAnswer, 30, 200*time.Millisecond)},
		{Match: claudeapi.Match{Prefix: PromptSlow}, Reply: claudeapi.Text(strings.Repeat("slowly ", 100), 100, 300*time.Millisecond)},
		{Match: claudeapi.Match{Exact: PromptXSS}, Reply: claudeapi.Text(xss, 1, 0)},
		{Match: claudeapi.Match{Exact: PromptWrite}, Reply: claudeapi.ToolUse("Write", map[string]any{
			"file_path": filepath.Join(work, WrittenFile), "content": "first line\nsecond line\n"})},
		{Match: claudeapi.Match{Exact: PromptRewrite}, Reply: claudeapi.ToolUse("Write", map[string]any{
			"file_path": filepath.Join(work, WrittenFile), "content": "first line\nthird line\n"})},
		{Match: claudeapi.Match{ToolResult: "Write"}, Reply: claudeapi.Text("Written.", 1, 0)},
		// Claude Code edits only a file it has read.
		{Match: claudeapi.Match{Exact: PromptEdit}, Reply: claudeapi.ToolUse("Read", map[string]any{"file_path": filepath.Join(work, GreetFile)})},
		{Match: claudeapi.Match{ToolResult: "Read"}, Reply: claudeapi.ToolUse("Edit", map[string]any{
			"file_path": filepath.Join(work, GreetFile), "old_string": "\treturn \"hello\"", "new_string": "\treturn \"hello, world\""})},
		{Match: claudeapi.Match{ToolResult: "Edit"}, Reply: claudeapi.Text("Edited.", 1, 0)},
		{Match: claudeapi.Match{Prefix: PromptEcho}, Reply: claudeapi.Text("You said it.", 1, 0)},
	}, Default: &claudeapi.Reply{Blocks: []claudeapi.Block{{Type: claudeapi.BlockText, Text: "Noted."}}}}
}
