package claudecode

import (
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/driver"
)

// A transcript opened twice at once branches; a line may be half written.
// The conversation is the newest branch, read as far as it could be.
func TestHistoryFollowsTheLastBranch(t *testing.T) {
	lines := []string{
		`{"type":"queue-operation","operation":"enqueue"}`,
		`{"type":"user","uuid":"u1","parentUuid":null,"timestamp":"2026-12-06T10:00:00Z","message":{"role":"user","content":"first"}}`,
		`{"type":"attachment","uuid":"a1","parentUuid":"u1"}`,
		`{"type":"assistant","uuid":"r1","parentUuid":"a1","timestamp":"2026-12-06T10:00:01Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":"answer one"}]}}`,
		`not json at all`,
		`{"type":"user","uuid":"u2","parentUuid":"r1","timestamp":"2026-12-06T10:01:00Z","message":{"role":"user","content":"abandoned branch"}}`,
		`{"type":"user","uuid":"u3","parentUuid":"r1","timestamp":"2026-12-06T10:02:00Z","message":{"role":"user","content":[{"type":"text","text":"<system-reminder>x</system-reminder>"},{"type":"text","text":"second"}]}}`,
		`{"type":"assistant","uuid":"r3","parentUuid":"u3","timestamp":"2026-12-06T10:02:01Z","message":{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"Bash","input":{}}]}}`,
		`{"type":"user","uuid":"u4","parentUuid":"r3","isMeta":false,"timestamp":"2026-12-06T10:02:02Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]}}`,
		`{"type":"assistant","uuid":"r4","parentUuid":"u4","timestamp":"2026-12-06T10:02:03Z","message":{"role":"assistant","content":[{"type":"text","text":"answer two"}]}}`,
		`{"type":"assistant","uuid":"r5","parentUuid":"r4","timest`,
	}
	turns, err := History(strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tn := range turns {
		got = append(got, tn.Role+":"+tn.Text+"@"+tn.ID)
	}
	want := []string{driver.TurnUser + ":first@u1", driver.TurnAgent + ":answer one@r1", driver.TurnUser + ":second@u3", driver.TurnAgent + ":answer two@r4"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("turns:\n got %q\nwant %q", got, want)
	}
}
