package transcript

import (
	"slices"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
)

// Following a session a person types into elsewhere (a watched terminal):
// their prompts are updates, Claude Code's notes and tool results are not,
// and the tool call waiting for its result is known (the one a permission
// prompt is about).
func TestParserPromptsAndUnanswered(t *testing.T) {
	t.Parallel()
	p := NewParser()
	p.prompts = true
	var prompts []string
	checked := false
	lines := goldenLines(t)
	for i, line := range lines {
		ps, err := p.Line(line)
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		for _, u := range ps {
			switch u := u.(type) {
			case chat.UserMessage:
				if u.MessageID == "" {
					t.Fatalf("line %d: a prompt without its record's id", i+1)
				}
				prompts = append(prompts, u.Text)
			case chat.ToolCall:
				if checked {
					continue
				}
				// The Bash call, its result not written yet.
				checked = true
				tc, name, ok := p.Unanswered()
				if !ok || name != "Bash" || tc.ToolCallID != u.ToolCallID {
					t.Fatalf("after the tool call %s: %+v %q %v, want it unanswered", u.ToolCallID, tc, name, ok)
				}
			}
		}
	}
	if !checked {
		t.Fatal("no tool call in the transcript")
	}
	if want := []string{"run ls", "ask", "ask", "askmulti"}; !slices.Equal(prompts, want) {
		t.Fatalf("prompts: %q, want %q", prompts, want)
	}
	if tc, _, ok := p.Unanswered(); ok {
		t.Fatalf("every call has its result, yet %+v is unanswered", tc)
	}
	// Without prompts (a session parley sends to), none is an update.
	q := NewParser()
	for _, line := range lines {
		ps, _ := q.Line(line)
		for _, u := range ps {
			if _, ok := u.(chat.UserMessage); ok {
				t.Fatalf("a prompt reported by a parser not asked for them: %+v", u)
			}
		}
	}
}
