// Package geminichat is Gemini CLI 0.61.0's saved chat, as every reader of it
// needs it: which file holds a session's chat, a message's text, and a
// person's prompt. The chat is JSON lines under
// ~/.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl: a header naming
// the session, then records that add or replace messages. Its readers (the
// ACP driver's history, the tmux driver's follower, the session index) parse
// the records for their own jobs; a tool call is parley's tool events here
// (Tool.Event), for each of them.
package geminichat

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/parleyhq/parley/internal/chat"
)

// ErrBadID is a session id that cannot be Gemini CLI's (it names a file).
var ErrBadID = errors.New("not a Gemini CLI session id")

// ErrNoChat is a session with no saved chat under the folder searched.
var ErrNoChat = errors.New("no saved chat of the session (Gemini CLI)")

// File is the chat file of session id under dir (~/.gemini, or
// $GEMINI_CLI_HOME/.gemini). A session resumed in a later minute than it
// began has a second file with its short id holding only a header and
// Gemini's context, while its messages go on in the first; a sub-agent's
// chat names its parent's session too: the largest file whose header names
// the session, not as a sub-agent, is its chat.
func File(dir, id string) (string, error) {
	if len(id) < 8 || strings.ContainsAny(id, `/\*?[`) {
		return "", fmt.Errorf("%q: %w", id, ErrBadID)
	}
	files, err := filepath.Glob(filepath.Join(dir, "tmp", "*", "chats", "session-*-"+id[:8]+".jsonl"))
	if err != nil {
		return "", err
	}
	best, size := "", int64(-1)
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil || fi.Size() <= size || sessionOf(f) != id {
			continue
		}
		best, size = f, fi.Size()
	}
	if best == "" {
		return "", fmt.Errorf("session %s in %s: %w", id, dir, ErrNoChat)
	}
	return best, nil
}

// sessionOf is the session id a chat file's header line names ("" for a
// sub-agent's chat or an unreadable header).
func sessionOf(path string) string {
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

// Text is a message's content as text: a string, or its parts' texts.
func Text(raw json.RawMessage) string {
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

// Prompt is a user message's text and whether the person wrote it: Gemini
// CLI adds a hidden <session_context> message of its own.
func Prompt(raw json.RawMessage) (string, bool) {
	text := Text(raw)
	return text, text != "" && !strings.HasPrefix(text, "<session_context>")
}

// Tool is a tool call as a chat message records it (its toolCalls): written
// when the call starts or ends, the message written again under its id.
type Tool struct {
	ID            string          `json:"id"`
	Name          string          `json:"name"`
	Args          json.RawMessage `json:"args"`
	Result        json.RawMessage `json:"result"` // the function response parts
	Status        string          `json:"status"` // success, error, cancelled once it ended
	DisplayName   string          `json:"displayName"`
	Description   string          `json:"description"`
	ResultDisplay json.RawMessage `json:"resultDisplay"`
}

// Ended reports whether the call is over (its result recorded).
func (t Tool) Ended() bool {
	switch t.Status {
	case "success", "error", "cancelled":
		return true
	}
	return false
}

// Event is the call as parley's tool events: the call (its status the
// end's once it ended, else in_progress) and its end.
func (t Tool) Event() (chat.ToolCall, chat.ToolCallUpdate) {
	status := "in_progress"
	switch {
	case t.Status == "success":
		status = "completed"
	case t.Ended():
		status = "failed"
	}
	kind := "other"
	switch t.Name {
	case "run_shell_command":
		kind = "execute"
	case "read_file", "read_many_files", "list_directory":
		kind = "read"
	case "write_file", "replace":
		kind = "edit"
	case "glob", "search_file_content", "grep":
		kind = "search"
	case "web_fetch", "google_web_search":
		kind = "fetch"
	}
	call := chat.ToolCall{ToolCallID: t.ID, Title: t.title(), Kind: kind, Status: status, Input: t.Args}
	return call, chat.ToolCallUpdate{ToolCallID: t.ID, Status: status, Output: t.output()}
}

// title names the call as Gemini CLI does: its description, else what it
// runs or touches (Gemini CLI 0.61.0's TUI records neither description nor
// display name), else its name.
func (t Tool) title() string {
	if d := strings.TrimSpace(t.Description); d != "" {
		return d
	}
	var args map[string]any
	_ = json.Unmarshal(t.Args, &args)
	for _, k := range []string{"command", "file_path", "absolute_path", "dir_path", "path", "pattern", "url", "query"} {
		if v, ok := args[k].(string); ok && strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v)
		}
	}
	if t.DisplayName != "" {
		return t.DisplayName
	}
	return t.Name
}

// output is what the tool gave: what Gemini CLI showed of it (when text),
// else the function response's output.
func (t Tool) output() string {
	var s string
	if json.Unmarshal(t.ResultDisplay, &s) == nil && s != "" {
		return s
	}
	var parts []struct {
		FunctionResponse struct {
			Response map[string]any `json:"response"`
		} `json:"functionResponse"`
	}
	if json.Unmarshal(t.Result, &parts) == nil {
		var out []string
		for _, p := range parts {
			for _, k := range []string{"output", "error"} {
				if v, ok := p.FunctionResponse.Response[k].(string); ok && v != "" {
					out = append(out, v)
				}
			}
		}
		return strings.Join(out, "\n")
	}
	return ""
}
