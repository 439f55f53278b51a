package tmux

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/tmux/pane"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

func TestOptionKind(t *testing.T) {
	t.Parallel()
	tests := []struct{ label, want string }{
		{"Yes", chat.OptionAllowOnce},
		{"Yes, and always allow access to cwd/ from this project", chat.OptionAllowAlways},
		{"Yes, and don't ask again for touch commands in /x", chat.OptionAllowAlways},
		{"No", chat.OptionRejectOnce},
		{"No, and tell Claude what to do differently", chat.OptionRejectOnce},
		// Gemini CLI's.
		{"Allow once", chat.OptionAllowOnce},
		{"Allow for this session", chat.OptionAllowAlways},
		{"No, suggest changes", chat.OptionRejectOnce},
	}
	for _, tt := range tests {
		if got := optionKind(tt.label); got != tt.want {
			t.Errorf("optionKind(%q): got %q, want %q", tt.label, got, tt.want)
		}
	}
}

func answerCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// 4: a Bash permission menu becomes a card; a message sent meanwhile waits as
// queued and goes once the card is answered; the answer really ran the tool.
func TestPermissionCardQueuesMessage(t *testing.T) {
	h := newHarness(t, scenario())
	s, k := h.start("t4")
	if err := h.prompt(s, "m1", "run it"); err != nil {
		t.Fatalf("Prompt: %v", err)
	}
	testkit.Eventually(t, 30*time.Second, func() bool { return len(k.permissions()) == 1 }, "no permission card")
	card := k.permissions()[0]
	ids := h.srv.ToolUseIDs("Bash")
	if len(ids) != 1 || card.RequestID != ids[0] || card.Tool.Name != "Bash" {
		t.Fatalf("card %+v, want request id %v (the tool use) and tool Bash", card, ids)
	}
	if got := len(card.Options); got != 3 || card.Options[0].Kind != chat.OptionAllowOnce || card.Options[2].Kind != chat.OptionRejectOnce {
		t.Fatalf("card options %+v, want Yes / Yes, and … / No", card.Options)
	}
	// parley debug pane sees the same menu through the same reader.
	var dbg strings.Builder
	if err := DebugSocket(context.Background(), &dbg, h.c.Socket(), s.name, t.TempDir()); err != nil {
		t.Fatalf("DebugSocket: %v", err)
	}
	for _, want := range []string{"live menu:     permission \"Bash command\" — Do you want to proceed?", "❯ 1. Yes", "input box:     not on the pane", "raw capture:"} {
		if !strings.Contains(dbg.String(), want) {
			t.Errorf("debug output lacks %q:\n%s", want, dbg.String())
		}
	}
	sent := make(chan error, 1)
	go func() { sent <- h.prompt(s, "m2", "hello") }()
	testkit.Eventually(t, 10*time.Second, func() bool {
		d := k.deliveries()
		return len(d) == 1 && d[0].MessageID == "m2" && d[0].State == chat.DeliveryQueued && d[0].Detail == "a permission menu is open"
	}, "no queued receipt for the message sent behind the menu: %+v", k.deliveries())
	select {
	case err := <-sent:
		t.Fatalf("Prompt behind a live menu returned %v before the card was answered", err)
	default:
	}
	if err := s.AnswerPermission(answerCtx(t), card.RequestID, driver.PermissionAnswer{OptionID: "1"}); err != nil {
		t.Fatalf("AnswerPermission: %v", err)
	}
	if err := <-sent; err != nil {
		t.Fatalf("queued Prompt after the answer: got %v, want nil", err)
	}
	testkit.Eventually(t, 30*time.Second, func() bool { _, ok := h.srv.ToolResult(card.RequestID); return ok }, "the stand-in never got the Bash tool result")
	if res, _ := h.srv.ToolResult(card.RequestID); res.IsError {
		t.Errorf("tool result is an error: %q", res.ResultText())
	}
	if _, err := os.Stat(filepath.Join(h.cwd, "made-by-bash")); err != nil {
		t.Errorf("the Bash command did not run: %v", err)
	}
	if !testkit.Within(30*time.Second, func() bool { return h.modelGot("hello") }) {
		t.Fatalf("the queued message never reached the model: %s\n%s", bodiesWith(h, "hello"), plain(h.capture(s)))
	}
	// Claude Code folds a message typed mid-turn into that turn: one turn in all.
	waitTurns(t, k, 1)
	if got := len(k.permissions()); got != 1 {
		t.Errorf("permission cards: got %d, want 1 (an answered card never comes back)", got)
	}
	if err := s.AnswerPermission(answerCtx(t), card.RequestID, driver.PermissionAnswer{OptionID: "1"}); !errors.Is(err, driver.ErrUnknownCard) {
		t.Errorf("answering twice: got %v, want %v", err, driver.ErrUnknownCard)
	}
}

// 5: an AskUserQuestion picker answered with a label and with free text; after
// a daemon restart (a new driver session on the same tmux pane, the old one
// never closed) or an adoption of that pane, no answered card is open again.
func TestQuestionCardAnswers(t *testing.T) {
	h := newHarness(t, scenario())
	s, k := h.start("t5")
	const q = "Which color do you prefer?"
	tests := []struct {
		prompt   string
		question string
		options  []string
		multi    bool
		answer   chat.Answer
		want     string
	}{
		{prompt: "ask", question: q, options: []string{"Blue", "Red"}, answer: chat.Answer{Text: "Blue"}, want: `"Which color do you prefer?"="Blue"`},
		{prompt: "ask", question: q, options: []string{"Blue", "Red"}, answer: chat.Answer{Text: "Green please"}, want: `"Which color do you prefer?"="Green please"`},
		{prompt: "askmulti", question: "Which fruits do you like?", options: []string{"Apple", "Banana", "Cherry"}, multi: true,
			answer: chat.Answer{Labels: []string{"Apple", "Cherry"}}, want: `"Which fruits do you like?"="Apple, Cherry"`},
	}
	for i, tt := range tests {
		if err := h.prompt(s, fmt.Sprintf("m%d", i), tt.prompt); err != nil {
			t.Fatalf("Prompt: %v", err)
		}
		testkit.Eventually(t, 30*time.Second, func() bool { return len(k.questions()) == i+1 }, "no question card %d", i+1)
		card := k.questions()[i]
		var labels []string
		if len(card.Questions) == 1 {
			for _, o := range card.Questions[0].Options {
				labels = append(labels, o.Label)
			}
		}
		if len(card.Questions) != 1 || card.Questions[0].Question != tt.question || card.Questions[0].MultiSelect != tt.multi || !slices.Equal(labels, tt.options) {
			t.Fatalf("card %+v, want %q (multi %v) with %q", card, tt.question, tt.multi, tt.options)
		}
		if err := s.AnswerQuestion(answerCtx(t), card.RequestID, driver.QuestionAnswer{Answers: chat.Answers{tt.question: tt.answer}}); err != nil {
			t.Fatalf("AnswerQuestion(%v): %v", tt.answer, err)
		}
		testkit.Eventually(t, 30*time.Second, func() bool { _, ok := h.srv.ToolResult(card.RequestID); return ok },
			"the stand-in never got the answer %q", tt.answer)
		if res, _ := h.srv.ToolResult(card.RequestID); !strings.Contains(res.ResultText(), tt.want) {
			t.Errorf("tool result %q, want it to contain %q", res.ResultText(), tt.want)
		}
		waitTurns(t, k, i+1)
	}
	// The daemon restarts: the old one never closes its session (it died), and
	// the new one starts the thread again on the same tmux session and pane,
	// or a person adopts that session by name. Neither shows an answered card.
	answered := k.questions()
	restart := h.spec("t5")
	adopt := h.spec("t5-adopt")
	adopt.Options[OptAdopt] = s.name
	for _, tc := range []struct {
		name string
		spec driver.Spec
	}{{"restart", restart}, {"adopt", adopt}} {
		k2 := newSink()
		sess2, err := h.drv.Start(context.Background(), tc.spec, k2)
		if err != nil {
			t.Fatalf("%s: Start: %v", tc.name, err)
		}
		t.Cleanup(func() { _ = sess2.Close(context.Background()) })
		s2 := sess2.(*session)
		if !s2.adopted || s2.pane != s.pane {
			t.Fatalf("%s: started on pane %s (adopted %v), want the existing pane %s", tc.name, s2.pane, s2.adopted, s.pane)
		}
		s2.scan()
		if got := k2.questions(); len(got) != 0 {
			t.Errorf("%s: question cards %+v, want none open", tc.name, got)
		}
		if got := k2.turnCount(); got != 0 {
			t.Errorf("%s: %d turns ended, want 0 (old hook events end no turn)", tc.name, got)
		}
		for _, c := range answered {
			if err := s2.AnswerQuestion(answerCtx(t), c.RequestID, driver.QuestionAnswer{Answers: chat.Answers{q: {Text: "Red"}}}); !errors.Is(err, driver.ErrUnknownCard) {
				t.Errorf("%s: answering old card %s: got %v, want %v", tc.name, c.RequestID, err, driver.ErrUnknownCard)
			}
		}
		if tc.name != "restart" {
			continue
		}
		// The restarted session works on, with the answered pickers in its
		// scrollback: its next turn shows no card either.
		if err := h.prompt(s2, "m-after", "hello"); err != nil {
			t.Fatalf("%s: Prompt: %v", tc.name, err)
		}
		waitTurns(t, k2, 1)
		testkit.Eventually(t, 30*time.Second, func() bool { return strings.Contains(k2.text(), "Hello from the stand-in.") },
			"%s: the reply never arrived from the transcript; got %q", tc.name, k2.text())
		if !testkit.Within(20*time.Second, func() bool {
			scr, err := s2.captureVisible(context.Background())
			return err == nil && strings.Contains(strings.Join(scr.Lines, "\n"), "Hello from the stand-in.")
		}) {
			t.Fatalf("%s: the reply never showed on the pane\n%s", tc.name, plain(h.capture(s2)))
		}
		s2.scan()
		if got := k2.questions(); len(got) != 0 {
			t.Errorf("%s: after a new turn: question cards %+v, want none", tc.name, got)
		}
	}
}

// 6: a menu that has scrolled up under later output is not a live card: here
// the model's own words look like a permission menu and are followed by more.
func TestMenuInHistoryIsNotACard(t *testing.T) {
	sc := scenario()
	sc.Rules = append([]claudeapi.Rule{{Match: claudeapi.Match{Exact: "fake menu"},
		Reply: claudeapi.Text("Bash command\n\nDo you want to proceed?\n❯ 1. Yes\n2. No\n", 1, 0)}}, sc.Rules...)
	h := newHarness(t, sc)
	s, k := h.start("t6")
	if err := h.prompt(s, "m1", "fake menu"); err != nil {
		t.Fatalf("Prompt: %v", err)
	}
	waitTurns(t, k, 1)
	// The Stop hook can run before the TUI draws the reply: wait for the screen.
	var scr *pane.Screen
	if !testkit.Within(20*time.Second, func() bool {
		var err error
		scr, err = s.capture(context.Background())
		return err == nil && strings.Contains(strings.Join(scr.Lines, "\n"), "1. Yes") && scr.LastSpeaker() == pane.SpeakerStatus
	}) {
		t.Fatalf("the fake menu and the turn's end are not on the pane:\n%s", plain(h.capture(s)))
	}
	s.scan()
	if m, live, why := scr.Menu(); live {
		t.Errorf("menu in history read as live: %+v\n%s", m, plain(h.capture(s)))
	} else {
		t.Logf("not live: %s", why)
	}
	if got := k.permissions(); len(got) != 0 {
		t.Errorf("permission cards %+v, want none", got)
	}
	// And a message goes through at once, not queued behind it.
	if err := h.prompt(s, "m2", "hello"); err != nil {
		t.Fatalf("Prompt after the fake menu: %v", err)
	}
	if d := k.deliveries(); len(d) != 0 {
		t.Errorf("receipts %+v, want none (nothing was queued)", d)
	}
}

func bodiesWith(h *harness, text string) string {
	var out []string
	for _, r := range h.srv.Requests() {
		out = append(out, fmt.Sprintf("%s %s %s rule=%d answered=%v last=%q", r.At.Format("15:04:05.000"), r.Kind, r.Path, r.Rule, r.Answered, r.LastUserText()))
		for _, m := range r.Messages {
			mb, _ := json.Marshal(m)
			if strings.Contains(string(mb), text) {
				out = append(out, r.Kind+" "+m.Role+": "+string(mb))
			}
		}
	}
	for _, d := range []string{h.drv.StateDir} {
		files, _ := filepath.Glob(filepath.Join(d, "*", "hooks.jsonl"))
		for _, f := range files {
			b, _ := os.ReadFile(f)
			for _, l := range strings.Split(string(b), "\n") {
				if i := strings.Index(l, "hook_event_name"); i >= 0 {
					out = append(out, "hook: "+l[i:min(len(l), i+60)])
				}
			}
		}
	}
	ps, _ := exec.Command("ps", "-eo", "pid,ppid,stat,etime,args").Output()
	for _, l := range strings.Split(string(ps), "\n") {
		if strings.Contains(l, "tmux.test") || strings.Contains(l, "claude") {
			out = append(out, "ps: "+l[:min(len(l), 200)])
		}
	}
	return strings.Join(out, "\n---\n")
}

// A remembered card never refuses a send on its own: the pane decides, and the
// stale card is withdrawn when the pane disagrees.
func TestStaleCardDoesNotBlock(t *testing.T) {
	h := newHarness(t, scenario())
	s, k := h.start("t-stale")
	s.mu.Lock()
	s.card = &openCard{id: "stale", kind: chat.CardPermission, menu: pane.Menu{Kind: pane.MenuPermission, Title: "Bash command"}}
	s.mu.Unlock()
	if err := h.prompt(s, "m1", "hello"); err != nil {
		t.Fatalf("Prompt with a stale card in memory: got %v, want nil", err)
	}
	if d := k.deliveries(); len(d) != 0 {
		t.Errorf("receipts %+v, want none (nothing to wait for)", d)
	}
	s.scan()
	k.mu.Lock()
	withdrawn := slices.Clone(k.withdrawn)
	k.mu.Unlock()
	if !slices.Contains(withdrawn, "stale") {
		t.Errorf("withdrawn %v, want the stale card", withdrawn)
	}
	waitTurns(t, k, 1)
}

// In an adopted session (no hooks, so card ids come from the pane alone) the
// same Bash command asked twice is two cards: the second is not taken for the
// answered first, and a message sent behind it goes once it is answered.
func TestAdoptedRepeatedMenuIsANewCard(t *testing.T) {
	h := newHarness(t, scenario())
	s, k := h.adoptPerson("mine", "t-repeat")
	if s.useHooks {
		t.Fatal("an adopted session runs without parley's hooks")
	}
	for i := 1; i <= 2; i++ {
		if err := h.prompt(s, fmt.Sprintf("m%d", i), "run it"); err != nil {
			t.Fatalf("Prompt %d: %v", i, err)
		}
		if !testkit.Within(30*time.Second, func() bool { return len(k.permissions()) == i }) {
			t.Fatalf("run %d: %d permission cards, want %d\n%s", i, len(k.permissions()), i, plain(h.capture(s)))
		}
		card := k.permissions()[i-1]
		if card.Tool.Name != "Bash" {
			t.Fatalf("card %d: %+v, want a Bash card", i, card)
		}
		if i == 2 {
			if first := k.permissions()[0]; first.RequestID == card.RequestID {
				t.Fatalf("the second appearance has the answered card's id %s", card.RequestID)
			}
			// A message sent while the second menu is up waits behind it.
			sent := make(chan error, 1)
			go func() { sent <- h.prompt(s, "m3", "hello") }()
			testkit.Eventually(t, 10*time.Second, func() bool {
				d := k.deliveries()
				return len(d) == 1 && d[0].MessageID == "m3" && d[0].State == chat.DeliveryQueued
			}, "no queued receipt behind the second menu: %+v", k.deliveries())
			defer func() {
				if err := <-sent; err != nil {
					t.Errorf("the message queued behind the second card: got %v, want nil", err)
				}
				if !testkit.Within(30*time.Second, func() bool { return h.modelGot("hello") }) {
					t.Errorf("the queued message never reached the model: %s\n%s", bodiesWith(h, "hello"), plain(h.capture(s)))
				}
			}()
		}
		if err := s.AnswerPermission(answerCtx(t), card.RequestID, driver.PermissionAnswer{OptionID: "1"}); err != nil {
			t.Fatalf("AnswerPermission %d: %v\n%s", i, err, plain(h.capture(s)))
		}
		if !testkit.Within(30*time.Second, func() bool {
			ids := h.srv.ToolUseIDs("Bash")
			if len(ids) < i {
				return false
			}
			_, ok := h.srv.ToolResult(ids[i-1])
			return ok
		}) {
			t.Fatalf("run %d: the stand-in never got the Bash tool result\n%s", i, plain(h.capture(s)))
		}
		if i == 1 {
			waitTurns(t, k, 1)
		}
	}
	if got := len(k.permissions()); got != 2 {
		t.Errorf("permission cards: got %d, want 2", got)
	}
}

// Two questions in one picker: the card carries both (from the PreToolUse
// hook), and the answer walks the pages and submits.
func TestQuestionCardTwoQuestions(t *testing.T) {
	h := newHarness(t, scenario())
	s, k := h.start("t-two")
	if err := h.prompt(s, "m1", "asktwo"); err != nil {
		t.Fatalf("Prompt: %v", err)
	}
	testkit.Eventually(t, 30*time.Second, func() bool { return len(k.questions()) == 1 }, "no question card")
	card := k.questions()[0]
	if len(card.Questions) != 2 || card.Questions[1].Question != "Which size?" {
		t.Fatalf("card %+v, want both questions", card)
	}
	answers := chat.Answers{"Which color do you prefer?": {Text: "Red"}, "Which size?": {Text: "Large"}}
	if err := s.AnswerQuestion(answerCtx(t), card.RequestID, driver.QuestionAnswer{Answers: answers}); err != nil {
		t.Fatalf("AnswerQuestion: %v\n%s", err, plain(h.capture(s)))
	}
	if !testkit.Within(30*time.Second, func() bool { _, ok := h.srv.ToolResult(card.RequestID); return ok }) {
		t.Fatalf("the stand-in never got the answers\n%s", plain(h.capture(s)))
	}
	res, _ := h.srv.ToolResult(card.RequestID)
	for _, want := range []string{`"Which color do you prefer?"="Red"`, `"Which size?"="Large"`} {
		if !strings.Contains(res.ResultText(), want) {
			t.Errorf("tool result %q lacks %q", res.ResultText(), want)
		}
	}
	waitTurns(t, k, 1)
	if got := len(k.questions()); got != 1 {
		t.Errorf("question cards: got %d, want 1", got)
	}
}

// A rejection with the person's words: "Tab to amend" on "No", and the model
// gets the words with the rejected tool result.
func TestPermissionRejectWithWords(t *testing.T) {
	h := newHarness(t, scenario())
	s, k := h.start("t-reject")
	if err := h.prompt(s, "m1", "run it"); err != nil {
		t.Fatalf("Prompt: %v", err)
	}
	testkit.Eventually(t, 30*time.Second, func() bool { return len(k.permissions()) == 1 }, "no permission card")
	card := k.permissions()[0]
	if err := s.AnswerPermission(answerCtx(t), card.RequestID, driver.PermissionAnswer{OptionID: "3", Message: "use printf instead"}); err != nil {
		t.Fatalf("AnswerPermission(No, with words): %v\n%s", err, plain(h.capture(s)))
	}
	if !testkit.Within(30*time.Second, func() bool { _, ok := h.srv.ToolResult(card.RequestID); return ok }) {
		t.Fatalf("the stand-in never got the tool result")
	}
	res, _ := h.srv.ToolResult(card.RequestID)
	if !strings.Contains(res.ResultText(), "use printf instead") || !strings.Contains(res.ResultText(), "doesn't want to proceed") {
		t.Errorf("tool result %q, want the rejection with the words", res.ResultText())
	}
	if _, err := os.Stat(filepath.Join(h.cwd, "made-by-bash")); err == nil {
		t.Error("the rejected command ran")
	}
}
