//go:build e2e

package claude_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
)

// An ask may wait far longer than Claude Code lets an HTTP MCP server's
// call go quiet (CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT, 5 minutes by default:
// then it aborts the call). Here that bound is shortened to its least, 1 s,
// and the person answers only after Claude Code's watchdog (every 30 s) has
// looked at the call: parley's progress notifications keep it alive, and the
// answer is still the tool's result.
func TestAskPersonOutlastsClaudesIdleBound(t *testing.T) {
	debug := filepath.Join(t.TempDir(), "claude-debug.log")
	r := newRig(t, toolScenario(), func(c *config.Config) {
		c.Agents[0].Env["CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT"] = "1000"
		c.Agents[0].Args = append(c.Agents[0].Args, "--debug-file", debug)
	})
	r.d.SetToolKeepAlive(200 * time.Millisecond)
	s := r.dial("ask-long", -1)
	s.Send(chatsock.Msg("m1", "ask the person"))
	i := s.WaitFor(0, wait, chatsock.Type(chat.TypeQuestion), "question card")
	var q chat.Question
	s.Get(i).Decode(&q)
	// The person answers only once Claude Code's watchdog has judged the
	// call (it logs the call still running on each of its looks).
	testkit.Eventually(t, 90*time.Second, func() bool {
		b, _ := os.ReadFile(debug)
		return strings.Contains(string(b), "Tool 'ask_person' still running")
	}, "Claude Code's watchdog never looked at the call (its debug log %s)", debug)
	s.Send(map[string]any{"type": "question_answer", "request_id": q.RequestID, "answers": map[string]any{"Which colour?": "Blue"}})
	s.WaitFor(i, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "done")
	res, ok := r.api.ToolResultFor("mcp__parley__ask_person")
	if !ok || res.IsError || strings.TrimSpace(res.ResultText()) != "Blue" {
		t.Fatalf("model got %q (found %v, error %v), want the answer Blue", res.ResultText(), ok, res.IsError)
	}
}
