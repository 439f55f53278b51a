package acp

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
)

// isCodex reports whether spec starts Codex (codex-acp).
func isCodex(spec driver.Spec) bool {
	switch strings.TrimSuffix(filepath.Base(spec.Command), ".js") {
	case "codex-acp", "codex":
		return true
	}
	return false
}

// codexHome is Codex's folder for spec's environment ($CODEX_HOME, else ~/.codex).
func codexHome(spec driver.Spec) string {
	if h := lookupEnv(spec.Env, "CODEX_HOME"); h != "" {
		return h
	}
	return filepath.Join(lookupEnv(spec.Env, "HOME"), ".codex")
}

// codexHistory reads session id's rollout under dir
// (sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl): the person's prompts and
// the answers as Codex showed them (its user_message and agent_message
// events, not the context it adds itself), and each function call with its
// output. A line that is not JSON (half written) is skipped.
func codexHistory(dir, id string) ([]driver.Turn, error) {
	if len(id) < 8 || strings.ContainsAny(id, `/\*?[`) {
		return nil, fmt.Errorf("%w: %q is not a Codex session id", chat.ErrBadInput, id)
	}
	files, err := filepath.Glob(filepath.Join(dir, "sessions", "*", "*", "*", "rollout-*-"+id+".jsonl"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%w: Codex has no rollout of session %s in %s", driver.ErrHistoryLost, id, dir)
	}
	f, err := os.Open(files[len(files)-1])
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var turns []driver.Turn
	calls := map[string]int{} // call id → its turn
	n := 0
	br := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		var rec struct {
			Timestamp time.Time `json:"timestamp"`
			Type      string    `json:"type"`
			Payload   struct {
				Type      string          `json:"type"`
				Message   string          `json:"message"`
				Name      string          `json:"name"`
				Arguments string          `json:"arguments"`
				CallID    string          `json:"call_id"`
				Output    json.RawMessage `json:"output"`
			} `json:"payload"`
		}
		if len(line) > 0 && json.Unmarshal(line, &rec) == nil {
			n++
			p := rec.Payload
			tid := fmt.Sprintf("%s-%d", id, n) // a rollout line has no id of its own
			switch {
			case rec.Type == "event_msg" && p.Type == "user_message" && strings.TrimSpace(p.Message) != "":
				turns = append(turns, driver.Turn{ID: tid, Role: driver.TurnUser, Text: strings.TrimSpace(p.Message), At: rec.Timestamp})
			case rec.Type == "event_msg" && p.Type == "agent_message" && strings.TrimSpace(p.Message) != "":
				turns = append(turns, driver.Turn{ID: tid, Role: driver.TurnAgent, Text: strings.TrimSpace(p.Message), At: rec.Timestamp})
			case rec.Type == "response_item" && p.Type == "function_call" && p.CallID != "":
				tc := codexToolCall(p.CallID, p.Name, p.Arguments)
				calls[p.CallID] = len(turns)
				turns = append(turns, driver.Turn{ID: tid, Role: driver.TurnTool, At: rec.Timestamp, Tool: &tc})
			case rec.Type == "response_item" && p.Type == "function_call_output":
				if i, ok := calls[p.CallID]; ok {
					turns[i].Tool.Status = "completed"
					turns[i].Result = &chat.ToolCallUpdate{ToolCallID: p.CallID, Status: "completed", Output: codexOutput(p.Output)}
				}
			}
		}
		if err == io.EOF {
			return turns, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// codexToolCall is a recorded function call as parley shows it: failed
// until its output says it ran.
func codexToolCall(id, name, args string) chat.ToolCall {
	tc := chat.ToolCall{ToolCallID: id, Title: name, Kind: "other", Status: "failed"}
	if json.Valid([]byte(args)) {
		tc.Input = json.RawMessage(args)
	}
	var in struct {
		Cmd     string   `json:"cmd"`
		Command []string `json:"command"`
	}
	_ = json.Unmarshal([]byte(args), &in)
	switch {
	case in.Cmd != "":
		tc.Title, tc.Kind = in.Cmd, "execute"
	case len(in.Command) > 0:
		tc.Title, tc.Kind = strings.Join(in.Command, " "), "execute"
	case name == "apply_patch":
		tc.Kind = "edit"
	}
	return tc
}

// codexOutput is a call's output as text (a string, or {"content": …}).
func codexOutput(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		Content string `json:"content"`
	}
	if json.Unmarshal(raw, &o) == nil && o.Content != "" {
		return o.Content
	}
	return string(raw)
}
