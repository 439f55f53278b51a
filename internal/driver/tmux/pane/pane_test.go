package pane

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The captures in testdata/claude-2.1.197 were taken with `tmux capture-pane
// -p -e` from Claude Code 2.1.197 in a 120×40 tmux 3.3a pane, driven by the
// scripted model API (internal/testkit/claudeapi); see testdata/README.md.
func golden(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "claude-2.1.197", name+".ansi"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestReadGoldens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		box     bool
		staged  string
		prompts []string
		speaker string
	}{
		{name: "idle", box: true, staged: "", prompts: nil, speaker: SpeakerNone},
		{name: "reply", box: true, prompts: []string{"hello"}, speaker: SpeakerStatus},
		{name: "staged", box: true, staged: "typed by hand but never sent", prompts: []string{"ask", "ask", "askmulti"}, speaker: SpeakerStatus},
		// The box's "Press up to edit queued messages" is a dim placeholder
		// whose first letter sits under the (reverse-video) cursor.
		{name: "queued-long", box: true, staged: "", speaker: SpeakerPerson},
		{name: "perm-bash", box: false, prompts: []string{"run ls"}, speaker: SpeakerTool},
		{name: "perm-answered", box: true, prompts: []string{"run ls"}, speaker: SpeakerStatus},
		{name: "question-single", box: false, prompts: []string{"run ls", "ask"}, speaker: SpeakerPerson},
		{name: "question-answered", box: true, prompts: []string{"run ls", "ask"}, speaker: SpeakerStatus},
		{name: "copy-mode", box: true, prompts: []string{"ask", "ask", "askmulti"}, speaker: SpeakerStatus},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Read(golden(t, tt.name))
			if got := s.HasBox(); got != tt.box {
				t.Errorf("HasBox: got %v, want %v", got, tt.box)
			}
			if got := s.Staged(); got != tt.staged {
				t.Errorf("Staged: got %q, want %q", got, tt.staged)
			}
			if tt.prompts != nil {
				if got := s.Prompts(); !slices.Equal(got, tt.prompts) {
					t.Errorf("Prompts: got %q, want %q", got, tt.prompts)
				}
			}
			if got := s.LastSpeaker(); got != tt.speaker {
				t.Errorf("LastSpeaker: got %q, want %q", got, tt.speaker)
			}
		})
	}
}

func TestQueuedLongPromptMatchesByTail(t *testing.T) {
	t.Parallel()
	s := Read(golden(t, "queued-long"))
	var b strings.Builder
	for i := 0; b.Len() < 5000; i++ {
		b.WriteString("line ")
		b.WriteString(strconv.Itoa(i))
		b.WriteString(" of a long message with words and numbers ")
		b.WriteString(strconv.Itoa(i * 7))
		b.WriteString("\n")
	}
	text := strings.TrimRight(b.String()[:5000], "\n ") + " END-OF-LONG-MESSAGE"
	if got := s.CountSubmitted(text); got != 1 {
		t.Errorf("CountSubmitted(long text): got %d, want 1", got)
	}
	if got := s.CountSubmitted("hello there second line"); got != 1 {
		t.Errorf("CountSubmitted(wrapped two-line prompt): got %d, want 1", got)
	}
}

func TestMenuGoldens(t *testing.T) {
	t.Parallel()
	type opt struct {
		n       int
		label   string
		desc    string
		checked bool
	}
	tests := []struct {
		name     string
		live     bool
		kind     string
		title    string
		question string
		multi    bool
		cursor   int
		opts     []opt
		free     int // number of the "Type something" option, 0 none
	}{
		{name: "perm-bash", live: true, kind: MenuPermission, title: "Bash command", question: "Do you want to proceed?", cursor: 1,
			opts: []opt{{n: 1, label: "Yes"}, {n: 2, label: "Yes, and always allow access to cwd/ from this project"}, {n: 3, label: "No"}}},
		{name: "question-single", live: true, kind: MenuQuestion, title: "Color", question: "Which color do you prefer?", cursor: 1, free: 3,
			opts: []opt{{n: 1, label: "Blue", desc: "The color of the sky"}, {n: 2, label: "Red", desc: "The color of fire"}, {n: 3, label: "Type something."}, {n: 4, label: "Chat about this"}}},
		// Under the cursor "Type something." goes dim: menus read the dim text too.
		{name: "question-typing", live: true, kind: MenuQuestion, title: "Color", question: "Which color do you prefer?", cursor: 3, free: 3,
			opts: []opt{{n: 1, label: "Blue", desc: "The color of the sky"}, {n: 2, label: "Red", desc: "The color of fire"}, {n: 3, label: "Type something."}, {n: 4, label: "Chat about this"}}},
		{name: "question-typed", live: true, kind: MenuQuestion, title: "Color", question: "Which color do you prefer?", cursor: 3,
			opts: []opt{{n: 1, label: "Blue", desc: "The color of the sky"}, {n: 2, label: "Red", desc: "The color of fire"}, {n: 3, label: "Green please"}, {n: 4, label: "Chat about this"}}},
		{name: "question-multi", live: true, kind: MenuQuestion, title: "Fruit", question: "Which fruits do you like?", multi: true, cursor: 1, free: 4,
			opts: []opt{{n: 1, label: "Apple", desc: "Crisp"}, {n: 2, label: "Banana", desc: "Soft"}, {n: 3, label: "Cherry", desc: "Small"}, {n: 4, label: "Type something", desc: "Submit"}, {n: 5, label: "Chat about this"}}},
		{name: "question-multi-toggled", live: true, kind: MenuQuestion, title: "Fruit", question: "Which fruits do you like?", multi: true, cursor: 1, free: 4,
			opts: []opt{{n: 1, label: "Apple", desc: "Crisp", checked: true}, {n: 2, label: "Banana", desc: "Soft"}, {n: 3, label: "Cherry", desc: "Small", checked: true}, {n: 4, label: "Type something", desc: "Submit"}, {n: 5, label: "Chat about this"}}},
		{name: "question-multi-review", live: true, kind: MenuReview, question: "Ready to submit your answers?", cursor: 1,
			opts: []opt{{n: 1, label: "Submit answers"}, {n: 2, label: "Cancel"}}},
		// "Tab to amend" on "No": the option takes the person's words.
		{name: "perm-amend", live: true, kind: MenuPermission, title: "Bash command", question: "Do you want to proceed?", cursor: 3,
			opts: []opt{{n: 1, label: "Yes"}, {n: 2, label: "Yes, and always allow access to cwd/ from this project"}, {n: 3, label: "No, and tell Claude what to do differently"}}},
		{name: "perm-amend-typed", live: true, kind: MenuPermission, title: "Bash command", question: "Do you want to proceed?", cursor: 3,
			opts: []opt{{n: 1, label: "Yes"}, {n: 2, label: "Yes, and always allow access to cwd/ from this project"}, {n: 3, label: "No, use printf instead"}}},
		{name: "perm-answered"},
		{name: "question-answered"},
		{name: "after-multi"},
		{name: "idle"},
		{name: "staged"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, live, why := Read(golden(t, tt.name)).Menu()
			if live != tt.live {
				t.Fatalf("live: got %v (%s), want %v", live, why, tt.live)
			}
			if !live {
				if why == "" {
					t.Error("no reason given for no live menu")
				}
				return
			}
			if m.Kind != tt.kind || m.Title != tt.title || m.Question != tt.question || m.MultiSelect != tt.multi || m.Cursor != tt.cursor {
				t.Errorf("got kind %q title %q question %q multi %v cursor %d, want %q %q %q %v %d",
					m.Kind, m.Title, m.Question, m.MultiSelect, m.Cursor, tt.kind, tt.title, tt.question, tt.multi, tt.cursor)
			}
			var got []opt
			for _, o := range m.Options {
				got = append(got, opt{n: o.Number, label: o.Label, desc: o.Description, checked: o.Checked})
			}
			if !slices.Equal(got, tt.opts) {
				t.Errorf("options:\n got %+v\nwant %+v", got, tt.opts)
			}
			f, ok := m.FreeOption()
			if gotFree := map[bool]int{true: f.Number, false: 0}[ok]; gotFree != tt.free {
				t.Errorf("free option: got %d, want %d", gotFree, tt.free)
			}
		})
	}
}

// A menu that scrolled up under later output is not live; an empty prompt
// line below it does not end it.
func TestMenuLiveOnlyWhenLast(t *testing.T) {
	t.Parallel()
	base := golden(t, "perm-bash")
	tests := []struct {
		name  string
		after string
		live  bool
	}{
		{name: "as captured", after: "", live: true},
		{name: "empty prompt line after", after: "\n❯ \n", live: true},
		{name: "assistant spoke after", after: "\n● The command ran.\n", live: false},
		{name: "tool result after", after: "\n  ⎿  Done\n", live: false},
		{name: "status after", after: "\n✻ Worked for 2s\n", live: false},
		{name: "spinner after", after: "\n✶ Spinning… (2s · ↑ 15 tokens)\n", live: false},
		{name: "submitted prompt after", after: "\n❯ next question\n", live: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, live, why := Read(strings.TrimRight(base, "\n") + "\n" + tt.after).Menu()
			if live != tt.live {
				t.Errorf("live: got %v (%s), want %v", live, why, tt.live)
			}
		})
	}
}

// The model's own words can look like a menu: a list inside its output is not one.
func TestMenuInsideAgentOutput(t *testing.T) {
	t.Parallel()
	capture := "────────────\n❯ fake menu\n\n● Bash command\n\n  Do you want to proceed?\n  ❯ 1. Yes\n  2. No\n\n────────────────────\n❯ \n────────────────────\n"
	if m, live, _ := Read(capture).Menu(); live {
		t.Errorf("a list in the agent's output read as a live menu: %+v", m)
	}
}

func TestStripDim(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{name: "dim placeholder dropped", in: "❯\u00a0\x1b[2mprevious prompt\x1b[0m", want: "❯"},
		{name: "cursor on placeholder", in: "❯\u00a0\x1b[7m\x1b[39mP\x1b[0;2m\x1b[39m\x1b[49mress\x1b[0m up", want: "❯  up"},
		{name: "cursor after real text kept", in: "❯\u00a0typed\x1b[7m \x1b[0m", want: "❯ typed"},
		{name: "bold is text", in: "\x1b[1mBash\x1b[0m command", want: "Bash command"},
		{name: "256 colors with a 2 inside", in: "\x1b[38;5;2mgreen\x1b[39m", want: "green"},
		{name: "truecolor", in: "\x1b[38;2;2;2;2mx\x1b[0m", want: "x"},
		{name: "dim carried across lines", in: "\x1b[2mdim\nstill dim\x1b[22m not", want: "\n not"},
		{name: "osc hyperlink", in: "\x1b]8;;http://x\x07link\x1b]8;;\x07", want: "link"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines, _ := stripDim(tt.in)
			if got := strings.Join(lines, "\n"); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestMatches(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("abc def ", 200) + "the end"
	tests := []struct {
		name, block, text string
		want              bool
	}{
		{name: "same", block: "yes", text: "yes", want: true},
		{name: "whitespace differs", block: "hello there\n  second line", text: "hello there\nsecond line", want: true},
		{name: "a longer prompt is not a repeat", block: "yes please", text: "yes", want: false},
		{name: "glued text is not the message", block: "stale textyes", text: "yes", want: false},
		{name: "long by its tail", block: "…" + long[len(long)-600:], text: long, want: true},
		{name: "empty never matches", block: "", text: " ", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Matches(tt.block, tt.text); got != tt.want {
				t.Errorf("Matches(%q, %q): got %v, want %v", tt.block, tt.text, got, tt.want)
			}
		})
	}
}

func TestBoxHolds(t *testing.T) {
	t.Parallel()
	box := func(content string) *Screen {
		return Read("──────────────────\n❯\u00a0" + content + "\n──────────────────\n")
	}
	tests := []struct {
		name, content, text string
		holds, in           bool
	}{
		{name: "exactly", content: "yes", text: "yes", holds: true, in: true},
		{name: "glued onto leftovers", content: "leftoveryes", text: "yes", holds: false, in: true},
		{name: "collapsed paste", content: "[Pasted text #1 +94 lines]", text: strings.Repeat("x\n", 94), holds: true, in: true},
		{name: "collapsed paste after leftovers", content: "abc[Pasted text #1 +94 lines]", text: strings.Repeat("x\n", 94), holds: false, in: true},
		{name: "empty", content: "", text: "yes", holds: false, in: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := box(tt.content)
			if got := s.BoxHolds(tt.text); got != tt.holds {
				t.Errorf("BoxHolds: got %v, want %v", got, tt.holds)
			}
			if got := s.InBox(tt.text); got != tt.in {
				t.Errorf("InBox: got %v, want %v", got, tt.in)
			}
		})
	}
}

// Working: Claude Code's status line under the box offers "esc to interrupt"
// only while a turn runs (a message typed then goes into its own queue).
func TestWorking(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"idle": false, "reply": false, "staged": false, "perm-bash": false, "perm-answered": false,
		"after-submit": true, "queued-long": true,
	} {
		if got := Read(golden(t, name)).Working(); got != want {
			t.Errorf("%s: Working() = %v, want %v", name, got, want)
		}
	}
}
