package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/geminichat"
)

// The earlier turns of an agent's own session, for a session started outside
// parley and continued here (driver.HistoryReader). session/load replays them,
// but that replay is hidden (it would double what parley's log already holds
// for its own sessions), so a continued session's past is read from the
// agent's own record, as for Claude Code: Gemini CLI's saved chat, Codex's
// rollout (codex_history.go).

// History implements driver.HistoryReader for the ACP agents whose record
// parley reads (Gemini CLI, Codex); for the others it is driver.ErrUnsupported.
func (d *Driver) History(ctx context.Context, spec driver.Spec) ([]driver.Turn, error) {
	switch {
	case isGemini(spec):
		return geminiHistory(geminiHome(spec), spec.ResumeID)
	case isCodex(spec):
		return codexHistory(codexHome(spec), spec.ResumeID)
	}
	return nil, fmt.Errorf("%w: parley does not read %s's record of its sessions", driver.ErrUnsupported, spec.AgentID)
}

var _ driver.HistoryReader = (*Driver)(nil)

// geminiHome is Gemini CLI's folder for spec's environment (~/.gemini, or
// $GEMINI_CLI_HOME/.gemini).
func geminiHome(spec driver.Spec) string {
	home := lookupEnv(spec.Env, "GEMINI_CLI_HOME")
	if home == "" {
		home = lookupEnv(spec.Env, "HOME")
	}
	return filepath.Join(home, ".gemini")
}

// geminiHistory reads session id's chat under dir (geminichat.File: a
// resumed session can leave a second file with the same short id holding
// only its header).
func geminiHistory(dir, id string) ([]driver.Turn, error) {
	p, err := geminichat.File(dir, id)
	switch {
	case errors.Is(err, geminichat.ErrBadID):
		return nil, fmt.Errorf("%w: %q is not a Gemini CLI session id", chat.ErrBadInput, id)
	case errors.Is(err, geminichat.ErrNoChat):
		return nil, fmt.Errorf("%w: Gemini CLI has no saved chat of session %s in %s", driver.ErrHistoryLost, id, dir)
	case err != nil:
		return nil, err
	}
	sid, best, err := readGeminiChat(p)
	if err != nil {
		return nil, err
	}
	if sid != id {
		return nil, fmt.Errorf("%w: Gemini CLI's chat %s is not session %s's", driver.ErrHistoryLost, p, id)
	}
	var turns []driver.Turn
	for _, m := range best {
		turns = append(turns, m.turns()...)
	}
	return turns, nil
}

// geminiMsg is one message of a saved chat (Gemini CLI 0.61.0).
type geminiMsg struct {
	ID        string            `json:"id"`
	Timestamp time.Time         `json:"timestamp"`
	Type      string            `json:"type"` // user, gemini, info, error…
	Content   json.RawMessage   `json:"content"`
	ToolCalls []geminichat.Tool `json:"toolCalls"`
}

// readGeminiChat reads a chat file as Gemini CLI rebuilds it: a header with
// the session id, then records that add a message, replace one (the same id
// again) or replace them all ({"$set": {"messages": …}}). A line that is not
// JSON (half written) is skipped.
func readGeminiChat(path string) (string, []geminiMsg, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	var id string
	var msgs []geminiMsg
	at := map[string]int{}
	add := func(m geminiMsg) {
		if i, ok := at[m.ID]; ok && m.ID != "" {
			msgs[i] = m
			return
		}
		at[m.ID] = len(msgs)
		msgs = append(msgs, m)
	}
	br := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		var rec struct {
			SessionID string `json:"sessionId"`
			geminiMsg
			Set *struct {
				Messages *[]geminiMsg `json:"messages"`
			} `json:"$set"`
		}
		if len(line) > 0 && json.Unmarshal(line, &rec) == nil {
			switch {
			case rec.SessionID != "":
				if id == "" {
					id = rec.SessionID
				}
			case rec.Set != nil:
				if rec.Set.Messages != nil {
					msgs, at = nil, map[string]int{}
					for _, m := range *rec.Set.Messages {
						add(m)
					}
				}
			case rec.Type != "":
				add(rec.geminiMsg)
			}
		}
		if err == io.EOF {
			return id, msgs, nil
		}
		if err != nil {
			return "", nil, err
		}
	}
}

// turns is the message as parley shows it: the person's words (not the
// <session_context> Gemini CLI adds), the answer's words, and each tool it
// ran, ended.
func (m geminiMsg) turns() []driver.Turn {
	var out []driver.Turn
	switch m.Type {
	case "user":
		if text, ok := geminichat.Prompt(m.Content); ok {
			out = append(out, driver.Turn{ID: m.ID, Role: driver.TurnUser, Text: text, At: m.Timestamp})
		}
	case "gemini":
		if text := geminichat.Text(m.Content); text != "" {
			out = append(out, driver.Turn{ID: m.ID, Role: driver.TurnAgent, Text: text, At: m.Timestamp})
		}
		for _, tc := range m.ToolCalls {
			if tc.ID == "" {
				continue
			}
			call, res := tc.Event()
			if !tc.Ended() { // the chat's last word on it: the session ended before it did
				call.Status, res.Status = "failed", "failed"
			}
			out = append(out, driver.Turn{ID: m.ID, Role: driver.TurnTool, At: m.Timestamp, Tool: &call, Result: &res})
		}
	}
	return out
}
