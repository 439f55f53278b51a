package claudecode

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/driver"
)

// MaxRecordBytes bounds one transcript line History reads; a longer one (a
// huge tool result) is skipped, not the whole transcript.
const MaxRecordBytes = 64 << 20

// History reads the conversation a Claude Code transcript holds: the person's
// texts and the answers' texts, in order. Records form a tree (uuid,
// parentUuid), and a session opened twice at once branches it: the
// conversation is the chain from the last message back to the first. Tool
// calls, tool results, side chains and Claude Code's own notes (isMeta,
// <system-reminder>, <command-…>) are left out. A line that is not JSON (one
// half written) is skipped.
func History(r io.Reader) ([]driver.Turn, error) {
	type node struct {
		parent string
		turns  []driver.Turn
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
				if !rec.IsMeta && rec.Message != nil && (rec.Type == "user" || rec.Type == "assistant") {
					role := driver.TurnUser
					if rec.Type == "assistant" {
						role = driver.TurnAgent
					}
					if text := messageText(rec.Message, role); text != "" {
						n.turns = []driver.Turn{{ID: rec.UUID, Role: role, Text: text, At: rec.Timestamp}}
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
	var chain []driver.Turn
	seen := map[string]bool{}
	for id := last; id != "" && !seen[id]; id = nodes[id].parent {
		seen[id] = true
		n, ok := nodes[id]
		if !ok {
			break // its parent is in another file (a forked session): the chain starts here
		}
		chain = append(chain, n.turns...)
	}
	for i, j := 0, len(chain)-1; i < j; i, j = i+1, j-1 {
		chain[i], chain[j] = chain[j], chain[i]
	}
	return chain, nil
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
