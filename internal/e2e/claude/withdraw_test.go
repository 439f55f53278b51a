//go:build e2e

package claude_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
)

// hookDenial is what the PermissionRequest hook answers; Claude Code passes it
// to the model as the tool result.
const hookDenial = "denied by the parley test hook"

// TestClaudeWithdrawsItsRequest: Claude Code itself withdraws an open
// can_use_tool request. Claude Code 2.1.197 races its stdio permission request
// against the PermissionRequest hooks; when a hook decides first, it aborts the
// request and writes control_cancel_request on stdout (parley did not stop the
// turn, so the card is still open in the driver when the withdrawal arrives).
// The hook here waits for a gate file, so the card is first seen open on both
// connections; then the withdrawal cancels it on both, and an answer afterwards
// is refused as no longer open.
func TestClaudeWithdrawsItsRequest(t *testing.T) {
	r := newRig(t, scenario(), nil)
	gate := filepath.Join(r.home, "gate")
	decision := fmt.Sprintf(`{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":%q}}}`, hookDenial)
	// The loop ends with the test's folder too, should the test fail first.
	hook := fmt.Sprintf("while [ ! -e %s ]; do [ -d %s ] || exit 1; sleep 0.05; done; echo '%s'", gate, r.home, decision)
	settings := fmt.Sprintf(`{"hooks":{"PermissionRequest":[{"matcher":"Bash","hooks":[{"type":"command","command":%q,"timeout":120}]}]}}`, hook)
	if err := os.MkdirAll(filepath.Join(r.home, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.home, ".claude", "settings.json"), []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}

	a := r.dial("withdrawn", -1)
	b := r.dial("withdrawn", -1)
	a.Send(chatsock.Msg("m1", "make the file"))
	ia, rid := permissionCard(t, a, 0)
	ib, ridB := permissionCard(t, b, 0)
	if ridB != rid {
		t.Fatalf("two connections show different cards: %s and %s", rid, ridB)
	}
	// Nobody answers; the hook decides, and Claude Code withdraws its request.
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cancelled := func(e client.Event) bool {
		return e.Type == chat.TypePermissionResolved && chatsock.FieldOf(e, "request_id") == rid
	}
	for name, c := range map[string]*chatsock.Conn{"a": a, "b": b} {
		from := ia
		if name == "b" {
			from = ib
		}
		j := c.WaitFor(from, wait, cancelled, "card resolved on connection "+name)
		if chatsock.FieldOf(c.Get(j), "cancelled") != true || chatsock.FieldOf(c.Get(j), "option_id") != nil {
			t.Fatalf("connection %s: card resolved as %s, want cancelled", name, c.Get(j).Raw)
		}
	}
	// Claude Code sent the withdrawal itself: the turn was never stopped, and it
	// ends normally once the model has the hook's denial. The card was cancelled
	// when Claude withdrew it, before the model's follow-up, not merely swept up
	// when the turn ended.
	done := a.WaitFor(0, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "turn ends normally")
	resolvedAt := a.WaitFor(ia, wait, cancelled, "resolved")
	followUp := a.WaitFor(ia, wait, func(e client.Event) bool {
		return e.Type == chat.TypeAgentChunk && strings.Contains(fmt.Sprint(chatsock.FieldOf(e, "text")), "The command ran.")
	}, "the model's follow-up")
	if !(resolvedAt < followUp && followUp < done) {
		t.Fatalf("card cancelled at %d, follow-up text at %d, prompt_done at %d: want the cancel first: %s",
			resolvedAt, followUp, done, chatsock.Summary(a.Snapshot()))
	}
	testkit.Eventually(t, 10*time.Second, func() bool { _, ok := r.api.ToolResultFor("Bash"); return ok }, "the tool result reached the model")
	res, _ := r.api.ToolResultFor("Bash")
	if !strings.Contains(res.ResultText(), hookDenial) {
		t.Fatalf("tool result %q: want the hook's denial (the decision was the hook's, not a card answer)", res.ResultText())
	}
	if _, err := os.Stat(filepath.Join(r.work, "made-by-bash")); err == nil {
		t.Fatal("the tool ran although the hook denied it")
	}
	// An answer after the withdrawal is refused, on either connection.
	for name, c := range map[string]*chatsock.Conn{"a": a, "b": b} {
		from := c.Len()
		c.Send(map[string]any{"type": "permission_response", "request_id": rid, "option_id": chat.OptionAllowOnce})
		k := c.WaitFor(from, wait, chatsock.Type(chat.TypeError), "late answer refused on "+name)
		if chatsock.FieldOf(c.Get(k), "code") != chat.CodeCardClosed || !strings.Contains(fmt.Sprint(chatsock.FieldOf(c.Get(k), "message")), "no longer open") {
			t.Fatalf("connection %s, late answer: %s", name, c.Get(k).Raw)
		}
	}
	// The card's state is stored: a new connection gets the request once, from
	// the log, and not again as an open card after the replay.
	c := r.dial("withdrawn", -1)
	requests := 0
	for _, ev := range c.Snapshot() {
		if ev.Type == chat.TypePermissionRequest && chatsock.FieldOf(ev, "request_id") == rid {
			requests++
		}
	}
	if requests != 1 {
		t.Fatalf("a new connection got the withdrawn card %d times, want once (from the log): %s", requests, chatsock.Summary(c.Snapshot()))
	}
}
