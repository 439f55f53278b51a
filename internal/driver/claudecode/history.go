package claudecode

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
)

// MaxRecordBytes bounds one transcript line History reads; a longer one (a
// huge tool result) is skipped, not the whole transcript.
const MaxRecordBytes = 64 << 20

// History reads the conversation a Claude Code transcript holds: the person's
// texts, the answers' texts and the tools the answers ran (with their
// results), in order. Records form a tree (uuid, parentUuid), and a session
// opened twice at once branches it: the conversation is the chain from the
// last message back to the first. Side chains and Claude Code's own notes
// (isMeta, <system-reminder>, <command-…>) are left out. A line that is not
// JSON (one half written) is skipped.
func History(r io.Reader) ([]driver.Turn, error) {
	type node struct {
		parent  string
		turns   []driver.Turn
		results []chat.ToolCallUpdate // the tool results a user record carries
	}
	nodes := map[string]node{}
	last := ""
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := readLine(br)
		if len(line) > 0 {
			var rec struct {
				Type        string    `json:"type"`
				UUID        string    `json:"uuid"`
				Parent      string    `json:"parentUuid"`
				IsSidechain bool      `json:"isSidechain"`
				IsMeta      bool      `json:"isMeta"`
				Timestamp   time.Time `json:"timestamp"`
				Message     *Message  `json:"message"`
			}
			if json.Unmarshal(line, &rec) == nil && rec.UUID != "" && !rec.IsSidechain {
				n := node{parent: rec.Parent}
				if !rec.IsMeta && rec.Message != nil {
					switch rec.Type {
					case "user":
						if text := messageText(rec.Message, driver.TurnUser); text != "" {
							n.turns = []driver.Turn{{ID: rec.UUID, Role: driver.TurnUser, Text: text, At: rec.Timestamp}}
						}
						n.results = toolResults(rec.Message)
					case "assistant":
						n.turns = answerTurns(rec.UUID, rec.Timestamp, rec.Message)
					}
				}
				nodes[rec.UUID] = n
				if rec.Type == "user" || rec.Type == "assistant" {
					last = rec.UUID
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	var chain []node
	seen := map[string]bool{}
	for id := last; id != "" && !seen[id]; id = nodes[id].parent {
		seen[id] = true
		n, ok := nodes[id]
		if !ok {
			break // its parent is in another file (a forked session): the chain starts here
		}
		chain = append(chain, n)
	}
	var turns []driver.Turn
	calls := map[string]int{} // tool call id → its turn
	for i := len(chain) - 1; i >= 0; i-- {
		for _, t := range chain[i].turns {
			if t.Tool != nil {
				calls[t.Tool.ToolCallID] = len(turns)
			}
			turns = append(turns, t)
		}
		for _, res := range chain[i].results {
			if j, ok := calls[res.ToolCallID]; ok {
				turns[j].Tool.Status = res.Status
				turns[j].Result = &res
			}
		}
	}
	return turns, nil
}

// answerTurns is an assistant record as turns: its text, and a TurnTool per
// tool it ran, in the record's order. A tool's status is "failed" until its
// result says otherwise (a record without one was cut short).
func answerTurns(id string, at time.Time, m *Message) []driver.Turn {
	var out []driver.Turn
	var text []string
	flush := func() {
		if len(text) > 0 {
			out = append(out, driver.Turn{ID: id, Role: driver.TurnAgent, Text: strings.Join(text, "\n\n"), At: at})
			text = nil
		}
	}
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		if s = strings.TrimSpace(s); s != "" {
			text = append(text, s)
		}
	}
	for _, b := range m.Blocks() {
		switch {
		case b.Type == "text" && strings.TrimSpace(b.Text) != "":
			text = append(text, strings.TrimSpace(b.Text))
		case b.Type == "tool_use" && b.ID != "":
			flush()
			tc := ToolCall(b)
			tc.Status = "failed"
			out = append(out, driver.Turn{ID: id, Role: driver.TurnTool, At: at, Tool: &tc})
		}
	}
	flush()
	return out
}

// toolResults are the tool results a user record carries.
func toolResults(m *Message) []chat.ToolCallUpdate {
	var out []chat.ToolCallUpdate
	for _, b := range m.Blocks() {
		if b.Type == "tool_result" && b.ToolUseID != "" {
			u := chat.ToolCallUpdate{ToolCallID: b.ToolUseID, Status: "completed", Output: b.ResultText()}
			if b.IsError {
				u.Status = "failed"
			}
			out = append(out, u)
		}
	}
	return out
}

// readLine reads one line whole; a line longer than MaxRecordBytes comes
// back empty (skipped), its rest read past.
func readLine(br *bufio.Reader) ([]byte, error) {
	var buf []byte
	tooLong := false
	for {
		part, err := br.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(part) > MaxRecordBytes {
				tooLong, buf = true, nil
			} else {
				buf = append(buf, part...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return buf, err
	}
}

// PromptText is what a person wrote in a user record: "" for Claude Code's
// own notes (<system-reminder>, <command-…>) and tool results.
func PromptText(m *Message) string { return messageText(m, driver.TurnUser) }

// messageText is the words of a person's message or of an answer.
func messageText(m *Message, role string) string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		if role == driver.TurnUser && isNote(s) {
			return ""
		}
		return strings.TrimSpace(s)
	}
	var parts []string
	for _, b := range m.Blocks() {
		if b.Type == "text" && strings.TrimSpace(b.Text) != "" && !(role == driver.TurnUser && isNote(b.Text)) {
			parts = append(parts, strings.TrimSpace(b.Text))
		}
	}
	return strings.Join(parts, "\n\n")
}

// isNote reports text Claude Code adds to a person's turn itself: reminders
// and the output of its own slash commands.
func isNote(s string) bool {
	s = strings.TrimSpace(s)
	for _, p := range []string{"<system-reminder>", "<command-", "<local-command-", "Caveat: The messages below"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
