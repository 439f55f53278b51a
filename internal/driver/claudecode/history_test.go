package claudecode

import (
	"os"
	"path/filepath"
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
	got := turnLines(turns)
	want := []string{driver.TurnUser + ":first@u1", driver.TurnAgent + ":answer one@r1", driver.TurnUser + ":second@u3",
		driver.TurnTool + ":t Bash completed ok@r3", driver.TurnAgent + ":answer two@r4"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("turns:\n got %q\nwant %q", got, want)
	}
}

func turnLines(turns []driver.Turn) []string {
	var got []string
	for _, tn := range turns {
		text := tn.Text
		if tn.Tool != nil {
			text = tn.Tool.ToolCallID + " " + tn.Tool.Title + " " + tn.Tool.Status
			if tn.Result != nil {
				text += " " + tn.Result.Output
			}
		}
		got = append(got, tn.Role+":"+text+"@"+tn.ID)
	}
	return got
}

// The tools an answer ran are turns of their own, in the answer's order,
// each ended: completed or failed by its result, failed when the record
// holds none (the session was cut short).
func TestHistoryHoldsTheToolCalls(t *testing.T) {
	lines := []string{
		`{"type":"user","uuid":"u1","parentUuid":null,"timestamp":"2026-12-06T10:00:00Z","message":{"role":"user","content":"look around"}}`,
		`{"type":"assistant","uuid":"r1","parentUuid":"u1","timestamp":"2026-12-06T10:00:01Z","message":{"role":"assistant","content":[{"type":"text","text":"Looking."},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls -a"}}]}}`,
		`{"type":"assistant","uuid":"r2","parentUuid":"r1","timestamp":"2026-12-06T10:00:01Z","message":{"role":"assistant","content":[{"type":"tool_use","id":"t2","name":"Read","input":{"file_path":"/w/gone.txt"}}]}}`,
		`{"type":"user","uuid":"u2","parentUuid":"r2","timestamp":"2026-12-06T10:00:02Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"a.txt"}]},{"type":"tool_result","tool_use_id":"t2","is_error":true,"content":"no such file"}]}}`,
		`{"type":"assistant","uuid":"r3","parentUuid":"u2","timestamp":"2026-12-06T10:00:03Z","message":{"role":"assistant","content":[{"type":"text","text":"One file."},{"type":"tool_use","id":"t3","name":"Bash","input":{"command":"rm a.txt"}}]}}`,
	}
	turns, err := History(strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		driver.TurnUser + ":look around@u1",
		driver.TurnAgent + ":Looking.@r1",
		driver.TurnTool + ":t1 ls -a completed a.txt@r1",
		driver.TurnTool + ":t2 Read /w/gone.txt failed no such file@r2",
		driver.TurnAgent + ":One file.@r3",
		driver.TurnTool + ":t3 rm a.txt failed@r3",
	}
	if got := turnLines(turns); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("turns:\n got %q\nwant %q", got, want)
	}
	if k := turns[3].Tool.Kind; k != "read" || len(turns[3].Tool.Locations) != 1 {
		t.Errorf("Read's kind %q, locations %v", k, turns[3].Tool.Locations)
	}
}

// Claude Code 2.1.197's TUI wrote a turn's answer before its question (the
// file as it was when a test read it, captured): the conversation is still
// the question, then the answer, followed from the newest leaf, not from
// the last line.
func TestHistoryOfATranscriptWrittenOutOfOrder(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "claude-2.1.197-tui-written-out-of-order.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	turns, err := History(f)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{driver.TurnUser + ":remember the word teapot@c04fdf7f-ea04-4588-a7c2-b4fef5b81e77",
		driver.TurnAgent + ":Remembered teapot.@20a2b12c-cac2-4948-9742-05483212b068"}
	if got := turnLines(turns); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("turns:\n got %q\nwant %q", got, want)
	}
}
